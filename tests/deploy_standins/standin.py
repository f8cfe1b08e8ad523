"""What the deploy stand-ins share: how they refuse, and where they keep state.

tests/system/test_deploy_docs.py puts this folder first on PATH, so the
``kubectl``, ``helm``, ``docker`` and ``systemctl`` of docs/deploying.md's
shell blocks are these programs.  Each does the offline part of exactly the
command it is given (render, validate, parse) and refuses anything else:
an unknown subcommand or flag exits 2 with one line naming it, so a typo in
the document fails its test; a command whose offline part fails exits 1.

Environment, set by the test:
  DEPLOY_STANDIN_STATE  a folder for state between commands (images built)
  DEPLOY_STANDIN_ROOT   the folder standing in for / where a command would
                        write the host's /etc or /opt
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def usage(program: str, message: str) -> NoReturn:
    """A command the stand-in does not know: exit 2, as the real tools do on a usage error."""
    print(f"{program} (stand-in): {message}", file=sys.stderr)
    sys.exit(2)


def failed(program: str, message: str) -> NoReturn:
    """The offline part of a known command failed: exit 1."""
    print(f"{program} (stand-in): {message}", file=sys.stderr)
    sys.exit(1)


def report_errors(program: str, errors: Iterable[str]) -> None:
    errors = list(errors)
    if errors:
        failed(program, "; ".join(errors))


def state_dir() -> Path:
    path = Path(os.environ["DEPLOY_STANDIN_STATE"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def host_path(path: str) -> Path:
    """Where an absolute host path lies inside the stand-in root."""
    return Path(os.environ["DEPLOY_STANDIN_ROOT"]) / path.lstrip("/")


class Flags:
    """A small argv reader: flags with values, switches, positionals; anything unknown is a usage error."""

    def __init__(self, program: str, argv: Sequence[str], *, values: Iterable[str] = (),
                 switches: Iterable[str] = (), stop_at_positional: int | None = None) -> None:
        self.values: dict[str, list[str]] = {}
        self.switches: set[str] = set()
        self.positional: list[str] = []
        self.rest: list[str] = []
        value_flags, switch_flags = set(values), set(switches)
        items = list(argv)
        while items:
            item = items.pop(0)
            if stop_at_positional is not None and len(self.positional) == stop_at_positional:
                self.rest = [item, *items]
                break
            name, eq, inline = item.partition("=")
            if item.startswith("-") and item != "-":
                if name in value_flags:
                    if eq:
                        value = inline
                    elif items:
                        value = items.pop(0)
                    else:
                        usage(program, f"flag {name} needs a value")
                    self.values.setdefault(name, []).append(value)
                elif item in switch_flags:
                    self.switches.add(item)
                else:
                    usage(program, f"unknown flag {item!r}")
            else:
                self.positional.append(item)

    def one(self, *names: str) -> str | None:
        given = [v for n in names for v in self.values.get(n, [])]
        return given[-1] if given else None

    def all(self, *names: str) -> list[str]:
        return [v for n in names for v in self.values.get(n, [])]
