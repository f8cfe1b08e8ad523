"""python -m dcgm_collector.engine: locate the simulated libdcgm.so.4, check scenarios, read it, serve it."""

from __future__ import annotations

import argparse
import os
import sys
import time

from dcgm_collector import engine
from dcgm_collector.engine import hostengine

try:
    from dcgm_collector import dcgm
except ImportError as missing:   # an unbuilt checkout: the binding says what to run
    sys.exit(f"error: {missing}")

# DCGM's debug log: the environment the engine reads when its starter names no file or severity
# (the library's engine_log.h); nv-hostengine's --log-filename / --log-level take precedence over it
_LOG_FILE_ENV = "__DCGM_DBG_FILE"
_LOG_LEVEL_ENV = "__DCGM_DBG_LVL"
_LOG_LEVELS = ("NONE", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "VERB")

# (field id, column title, format) of the table `read` prints
_READ_COLUMNS = ((203, "util %", "{:>6}"), (155, "power W", "{:>8.1f}"), (150, "temp C", "{:>6}"),
                 (252, "fb used MiB", "{:>11}"), (100, "sm MHz", "{:>6}"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dcgm_collector.engine",
        description="The DCGM-compatible engine (libdcgm.so.4) shipped with dcgm-collector.",
        epilog=(
            "Run any DCGM client against the engine with\n"
            "  LD_LIBRARY_PATH=$(python -m dcgm_collector.engine libdir) CLIENT\n"
            f"and choose the simulated node with {engine.SCENARIO_ENV}=N (N GPUs) or =FILE,\n"
            f"or read the real GPUs through NVML with {engine.SOURCE_ENV}=nvml."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.add_parser("libdir", help=f"print the directory holding {engine.LIBRARY_NAME}")
    commands.add_parser("libpath", help=f"print the full path of {engine.LIBRARY_NAME}")
    commands.add_parser("nvml-libdir", help=f"print the directory holding the simulated {engine.NVML_LIBRARY_NAME}")
    check = commands.add_parser("check", help="validate scenario files (exit 1 on the first bad one)")
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario file (TOML) or flight recording (.parquet)")
    read = commands.add_parser(
        "read", help="read a simulated node through the DCGM binding and print a table per second"
    )
    read.add_argument("--sim", default="", metavar="N|SCENARIO",
                      help="GPU count, scenario file, shipped scenario name or flight recording (.parquet) "
                           "(default: 8 H100s training)")
    read.add_argument("--seconds", type=int, default=3, help="how many tables to print (default 3)")
    hostengine = commands.add_parser(
        "hostengine",
        help="run a simulated nv-hostengine that remote clients reach with -r / dcgmConnect",
        description=(
            "Serve a simulated node to remote DCGM clients until SIGTERM or SIGINT. "
            "Prints one line 'listening on ADDRESS' once clients can connect."
        ),
    )
    where = hostengine.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, metavar="N", help="TCP port (0: any free one)")
    where.add_argument("--unix", metavar="PATH", help="unix socket path")
    hostengine.add_argument("--address", default="127.0.0.1", metavar="HOST",
                            help="TCP address to listen on (default 127.0.0.1)")
    hostengine.add_argument("--scenario", default=None, metavar="N|SCENARIO",
                            help=f"GPU count, scenario file, shipped scenario name (spikes, xid-burst, ...) or flight "
                                 f"recording (.parquet) "
                                 f"(default: ${engine.SCENARIO_ENV}, else 8 H100s training)")
    hostengine.add_argument("-f", "--log-filename", default=None, metavar="FILE",
                            help=f"the engine's debug log file, as nv-hostengine's option (default: "
                                 f"${_LOG_FILE_ENV}, else /var/log/nv-hostengine.log; '-' is stdout)")
    hostengine.add_argument("--log-level", default=None, metavar="LEVEL",
                            choices=_LOG_LEVELS, type=str.upper,
                            help=f"the log's severity: {', '.join(_LOG_LEVELS)} (default: ${_LOG_LEVEL_ENV}, "
                                 f"else ERROR)")
    hostengine.add_argument("--nvml", action="store_true",
                            help=f"serve the driver's GPUs read through NVML (libnvidia-ml.so.1 from "
                                 f"${engine.NVML_LIB_ENV}, else the dynamic linker's search) instead of "
                                 f"simulated ones")
    return parser


def _scenario(spec: str) -> str:
    """A scenario spec as given, a shipped scenario's path, or the scenario replaying a flight recording."""
    spec = engine.resolve_scenario(spec)
    if not engine.is_recording(spec):
        return spec
    spec, warnings = engine.replay_recording(spec)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return spec


def _read(spec: str, seconds: int) -> None:
    if spec:
        spec = _scenario(spec)
        engine.check_scenario(spec)
        os.environ[engine.SCENARIO_ENV] = spec
    field_ids = [column[0] for column in _READ_COLUMNS]
    with dcgm.Handle.embedded(library=engine.library_path()) as handle:
        names = {gpu.gpu_id: gpu.name for gpu in handle.gpus()}
        group = handle.all_gpus()
        field_groups = handle.create_field_groups(field_ids, "sim-read")
        handle.watch(group, field_groups, update_freq_us=100_000, max_keep_age_s=10.0)
        for tick in range(seconds):
            time.sleep(1.0)
            values = {(v.entity_id, v.field_id): v.value for v in handle.latest_values(group, field_groups)}
            titles = " ".join(title for _, title, _ in _READ_COLUMNS)
            print(f"{f't={tick + 1}s':<6}{'gpu':>4}  {'model':<26}{titles}")
            for gpu_id, name in sorted(names.items()):
                cells = []
                for field_id, title, fmt in _READ_COLUMNS:
                    value = values.get((gpu_id, field_id))
                    cells.append("-".rjust(len(title)) if value is None else fmt.format(value).rjust(len(title)))
                print(f"{'':<6}{gpu_id:>4}  {name:<26}" + " ".join(cells))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "libdir":
            print(engine.library_dir())
        elif args.command == "libpath":
            print(engine.library_path())
        elif args.command == "nvml-libdir":
            print(engine.nvml_library_dir())
        elif args.command == "read":
            _read(args.sim, args.seconds)
        elif args.command == "hostengine":
            if args.unix is not None and args.address != "127.0.0.1":
                raise ValueError("--address applies to --port, not --unix")
            if args.nvml:
                if args.scenario is not None:
                    raise ValueError("give --nvml or --scenario, not both")
                engine.check_nvml()
                os.environ[engine.SOURCE_ENV] = "nvml"
            # the server is this process: an option overrides the environment it would fall back on
            if args.log_filename:
                os.environ[_LOG_FILE_ENV] = args.log_filename
            if args.log_level:
                os.environ[_LOG_LEVEL_ENV] = args.log_level
            scenario = None if args.scenario is None else _scenario(args.scenario)
            hostengine.serve(port=args.port, address=args.address, unix_path=args.unix, scenario=scenario)
        else:
            for path in args.files:
                engine.check_scenario(_scenario(path))
                print(f"{path}: ok")
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
