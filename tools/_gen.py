"""What the generators in tools/ share: repository-relative default paths,
reading the TSV files in reference/, and the rule that ``--check`` writes nothing
and fails on any output that differs from what the generator would write.

Each generator runs as a script, so tools/ is on sys.path and it imports
this module as ``_gen``.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


class GenerationError(Exception):
    pass


def resolve(arg: str, default: str) -> Path:
    """A default path is relative to the repository root, whatever the working
    directory; an explicit one is taken as given."""
    return REPO_ROOT / default if arg == default else Path(arg)


def command_line(script: str, *options: tuple[str, str, str]) -> str:
    """The command that regenerates the outputs, naming only the (flag, value,
    default) options that were not left at their defaults."""
    command = f"python3 tools/{script}"
    for flag, value, default in options:
        if value != default:
            command += f" {flag} {value}"
    return command


def read_tsv(path: Path, required: frozenset[str]) -> list[tuple[int, dict]]:
    """(line number, row) for each row of a tab-separated file with a header
    that names at least the ``required`` columns."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = sorted(required - set(reader.fieldnames or ()))
        if missing:
            raise GenerationError(f"{path}: missing columns {', '.join(missing)}")
        return [(reader.line_num, row) for row in reader]


def check_outputs(tool: str, outputs: dict[Path, str], command: str) -> int:
    """1, after naming each on stderr, if any output is missing or stale; else 0."""
    stale = [path for path, text in outputs.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    for path in stale:
        print(f"{tool}: {path} is stale; rerun {command}", file=sys.stderr)
    return 1 if stale else 0


def write_outputs(outputs: dict[Path, str]) -> None:
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
