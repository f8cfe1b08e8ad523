"""python -m dcgm_collector.sim: locate the simulated libdcgm.so.4, check scenarios."""

from __future__ import annotations

import argparse
import sys

from dcgm_collector import sim


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dcgm_collector.sim",
        description="The simulated libdcgm.so.4 shipped with dcgm-collector.",
        epilog=(
            "Run any DCGM client against the simulator with\n"
            "  LD_LIBRARY_PATH=$(python -m dcgm_collector.sim libdir) CLIENT\n"
            f"and choose the simulated node with {sim.SCENARIO_ENV}=N (N GPUs) or =FILE."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.add_parser("libdir", help=f"print the directory holding {sim.LIBRARY_NAME}")
    commands.add_parser("libpath", help=f"print the full path of {sim.LIBRARY_NAME}")
    check = commands.add_parser("check", help="validate scenario files (exit 1 on the first bad one)")
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario file (TOML)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "libdir":
            print(sim.library_dir())
        elif args.command == "libpath":
            print(sim.library_path())
        else:
            for path in args.files:
                sim.check_scenario(path)
                print(f"{path}: ok")
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
