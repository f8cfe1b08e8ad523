#!/usr/bin/env python3
"""Generate dcgm_collector/data/fields.json, the collector's DCGM field table.

The collector resolves the names a counters.csv may use (DCGM 4.6 names,
the deprecated aliases DCGM 4.6 still defines, and the legacy names go-dcgm
accepts) and needs each field's type, entity level, scope and unit.  Those
facts come from fields.tsv (rows with in_meta_table == yes) and
legacy-names.tsv, so the table is generated rather than written by hand.

    python3 tools/gen_fields_data.py            # rewrite the data file
    python3 tools/gen_fields_data.py --check    # fail if it is out of date

Default paths are relative to the repository root, whatever the working
directory; explicit paths are taken as given.

Units: fields.tsv holds several partial hints, none complete or always
right, so the first that applies wins:

1. the dcgm-exporter help text, "(in MHz)" or "in bytes per second", because
   it is what users of the shipped counters files already read;
2. the unit the DCGM header comment states (unit_from_comment), with "MB"
   read as MiB (DCGM reports frame buffer and BAR1 sizes in MiB) and "/s"
   added when the description speaks of a rate ("in mW/s");
3. the unit word DCGM 4.6 put in the name (name_unit_tokens): CELSIUS,
   WATTS, BYTES, and RATIO, which means % on an integer field (such as
   DCGM_FI_DEV_GPU_UTIL_RATIO, 0-100) and a 0-1 ratio on a double;
4. the dmon column unit, but only the throughput and energy units; its "C"
   is also used for bitmaps and its "#" only says "a count".

Units are spelled C, W, mW/s, mJ, MHz, %, ns, ms, s, MiB, B, B/s, KB/s,
MB/s and ratio; a field none of the hints covers has no unit (null).

Event fields are the ones DCGM samples only when something happens, not on
each watch tick (api-facts section 4.3): XID errors and NVLink errors.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from _gen import GenerationError, check_outputs, read_tsv, resolve, write_outputs
from _gen import command_line as regenerate_command

DEFAULT_FIELDS = "reference/dcgm/fields.tsv"
DEFAULT_LEGACY = "reference/dcgm/legacy-names.tsv"
DEFAULT_OUTPUT = "dcgm_collector/data/fields.json"

FORMAT_VERSION = 1
FIELD_KINDS = ("field", "internal")
ALIAS_KINDS = {"deprecated_alias": "deprecated", "alias": "alias"}
FIELD_TYPES = ("b", "d", "i", "s", "t")
PROFILING_IDS = range(1001, 1100)
EVENT_FIELD_NAMES = ("DCGM_FI_DEV_XID_ERROR", "DCGM_FI_DEV_NVLINK_ERROR")
# DCGM's "no field" placeholder: names for it resolve to nothing collectable.
PLACEHOLDER_ID = 0

FIELD_COLUMNS = ("id", "name", "type", "entity_level", "scope", "unit", "is_profiling", "is_event")
ALIAS_COLUMNS = ("name", "id", "kind")

HELP_UNITS = {"MHz": "MHz", "C": "C", "W": "W", "%": "%", "ns": "ns", "MiB": "MiB", "mJ": "mJ"}
HELP_UNIT_PATTERN = re.compile(r"\(in ([^)]+)\)")
HELP_RATE_PATTERN = re.compile(r"\bin bytes per second\b")
COMMENT_UNITS = {
    "bytes": "B", "ns": "ns", "ms": "ms", "s": "s", "MB": "MiB", "W": "W", "mW": "mW",
    "mJ": "mJ", "ratio": "ratio", "degC": "C", "percent": "%", "MB;MB/s": "MB/s",
}
NAME_TOKEN_UNITS = {"CELSIUS": "C", "WATTS": "W", "BYTES": "B"}
DMON_UNITS = {"MB/s": "MB/s", "KB/s": "KB/s", "W": "W", "mJ": "mJ"}

REQUIRED_COLUMNS = frozenset((
    "name", "field_id", "kind", "alias_of", "field_type_char", "entity_level", "scope",
    "dmon_unit", "name_unit_tokens", "unit_from_comment", "in_meta_table", "description",
    "exporter_help",
))


@dataclass(frozen=True)
class FieldRow:
    field_id: int
    name: str
    type_char: str
    entity_level: str
    scope: str
    unit: str | None

    def as_list(self) -> list:
        return [
            self.field_id, self.name, self.type_char, self.entity_level, self.scope, self.unit,
            self.field_id in PROFILING_IDS, self.name in EVENT_FIELD_NAMES,
        ]


def parse_int(text: str, what: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise GenerationError(f"{where}: {what} {text!r} is not an integer") from None


def strip_prefix(value: str, prefix: str, what: str, where: str) -> str:
    if not value.startswith(prefix) or len(value) == len(prefix):
        raise GenerationError(f"{where}: unknown {what} {value!r}")
    return value[len(prefix):]


def unit_from_help(help_text: str) -> str | None:
    if HELP_RATE_PATTERN.search(help_text):
        return "B/s"
    match = HELP_UNIT_PATTERN.search(help_text)
    return HELP_UNITS.get(match.group(1)) if match else None


def unit_from_comment(raw: str, description: str) -> str | None:
    unit = COMMENT_UNITS.get(raw)
    if unit and f"in {raw}/s" in description:
        unit += "/s"
    return unit


def unit_from_name(tokens: str, type_char: str) -> str | None:
    for token in tokens.split(";"):
        if token == "RATIO":
            return "%" if type_char == "i" else "ratio"
        if token in NAME_TOKEN_UNITS:
            return NAME_TOKEN_UNITS[token]
    return None


def choose_unit(row: dict) -> str | None:
    return (
        unit_from_help(row["exporter_help"])
        or unit_from_comment(row["unit_from_comment"], row["description"])
        or unit_from_name(row["name_unit_tokens"], row["field_type_char"])
        or DMON_UNITS.get(row["dmon_unit"].strip())
    )


def row_to_field(row: dict, where: str) -> FieldRow:
    type_char = row["field_type_char"]
    if type_char not in FIELD_TYPES:
        raise GenerationError(f"{where}: unknown field type {type_char!r}")
    return FieldRow(
        field_id=parse_int(row["field_id"], "field_id", where),
        name=row["name"],
        type_char=type_char,
        entity_level=strip_prefix(row["entity_level"], "DCGM_FE_", "entity level", where),
        scope=strip_prefix(row["scope"], "DCGM_FS_", "scope", where).lower(),
        unit=choose_unit(row),
    )


class TableBuilder:
    """Collects fields and names, refusing any name bound to two ids."""

    def __init__(self) -> None:
        self.fields: dict[int, FieldRow] = {}
        self.names: dict[str, tuple[int, str]] = {}   # name -> (id, kind)

    def add_field(self, field: FieldRow, where: str) -> None:
        if field.field_id in self.fields:
            raise GenerationError(f"{where}: id {field.field_id} registered twice")
        if not 0 < field.field_id < 65536:
            raise GenerationError(f"{where}: id {field.field_id} out of range")
        self.fields[field.field_id] = field
        self.add_name(field.name, field.field_id, "canonical", where)

    def add_name(self, name: str, field_id: int, kind: str, where: str) -> None:
        if not name:
            raise GenerationError(f"{where}: empty name")
        known = self.names.get(name)
        if known is None:
            self.names[name] = (field_id, kind)
        elif known[0] != field_id:
            raise GenerationError(f"{where}: {name} means id {known[0]} and id {field_id}")
        # the same name listed again for the same id keeps its first (stronger) kind

    def add_alias(self, name: str, field_id: int, kind: str, where: str) -> None:
        if field_id == PLACEHOLDER_ID:
            return
        if field_id not in self.fields:
            raise GenerationError(f"{where}: {name} names id {field_id}, which has no metadata")
        self.add_name(name, field_id, kind, where)

    def aliases(self) -> list[list]:
        rows = [[name, field_id, kind] for name, (field_id, kind) in self.names.items() if kind != "canonical"]
        return sorted(rows, key=lambda row: (row[1], row[0]))


def build_table(fields_path: Path, legacy_path: Path) -> TableBuilder:
    builder = TableBuilder()
    field_rows = read_tsv(fields_path, REQUIRED_COLUMNS)
    by_name = {row["name"]: row for _, row in field_rows}
    for line, row in field_rows:
        if row["in_meta_table"] == "yes" and row["kind"] in FIELD_KINDS:
            builder.add_field(row_to_field(row, f"{fields_path}:{line}"), f"{fields_path}:{line}")
    if not builder.fields:
        raise GenerationError(f"{fields_path}: no rows with in_meta_table == yes")
    present = {field.name for field in builder.fields.values()}
    for name in EVENT_FIELD_NAMES:
        if name not in present:
            raise GenerationError(f"{fields_path}: event field {name} is not in the table")
    for line, row in field_rows:
        if row["kind"] not in ALIAS_KINDS:
            continue
        where = f"{fields_path}:{line}"
        field_id = parse_int(row["field_id"], "field_id", where)
        target = by_name.get(row["alias_of"])
        if target is None or parse_int(target["field_id"], "field_id", where) != field_id:
            raise GenerationError(f"{where}: {row['name']} is an alias of {row['alias_of']!r}, not of id {field_id}")
        builder.add_alias(row["name"], field_id, ALIAS_KINDS[row["kind"]], where)
    for line, row in read_tsv(legacy_path, frozenset(("name", "field_id"))):
        where = f"{legacy_path}:{line}"
        builder.add_alias(row["name"], parse_int(row["field_id"], "field_id", where), "legacy", where)
    return builder


def command_line(fields_arg: str, legacy_arg: str) -> str:
    return regenerate_command("gen_fields_data.py", ("--fields", fields_arg, DEFAULT_FIELDS),
                              ("--legacy", legacy_arg, DEFAULT_LEGACY))


def json_line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def render(builder: TableBuilder, command: str) -> str:
    """One field or alias per line, so a regenerated file diffs line by line."""
    fields = [builder.fields[field_id].as_list() for field_id in sorted(builder.fields)]
    aliases = builder.aliases()
    lines = [
        "{",
        f'"generated_by": {json_line(command + " from reference/dcgm/fields.tsv and legacy-names.tsv")},',
        f'"format": {FORMAT_VERSION},',
        f'"field_columns": {json_line(list(FIELD_COLUMNS))},',
        '"fields": [',
        ",\n".join(json_line(row) for row in fields),
        "],",
        f'"alias_columns": {json_line(list(ALIAS_COLUMNS))},',
        '"aliases": [',
        ",\n".join(json_line(row) for row in aliases),
        "]",
        "}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fields", default=DEFAULT_FIELDS,
                        help="fields.tsv (default: %(default)s from the repository root)")
    parser.add_argument("--legacy", default=DEFAULT_LEGACY,
                        help="legacy-names.tsv (default: %(default)s from the repository root)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help="JSON file to write (default: %(default)s from the repository root)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the output is missing or stale")
    args = parser.parse_args(argv)
    command = command_line(args.fields, args.legacy)
    try:
        builder = build_table(resolve(args.fields, DEFAULT_FIELDS), resolve(args.legacy, DEFAULT_LEGACY))
    except (OSError, GenerationError) as error:
        print(f"gen_fields_data: {error}", file=sys.stderr)
        return 2
    text = render(builder, command)
    output = resolve(args.output, DEFAULT_OUTPUT)
    if args.check:
        return check_outputs("gen_fields_data", {output: text}, command)
    write_outputs({output: text})
    print(f"gen_fields_data: wrote {len(builder.fields)} fields and {len(builder.aliases())} aliases to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
