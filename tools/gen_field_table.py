#!/usr/bin/env python3
"""Generate native/node/field_table.c, the simulator's field metadata, and
native/dcgm_field_ids.h, the DCGM_FI_* field ids the C sources name fields by.

The simulated libdcgm must answer DcgmFieldGetById / DcgmFieldGetByTag for
exactly the ids DCGM 4.6 has metadata for, with the same type, size, tag,
scope, NVML id, entity level and dmon format.  fields.tsv records those
facts (column in_meta_table == yes), so the C table is generated from it
rather than written by hand.  So are the ids: one #define per field (and
per alias DCGM has not deprecated), so that a C file names a field by its
DCGM name instead of a hand-written enum of numbers.

    python3 tools/gen_field_table.py            # rewrite both
    python3 tools/gen_field_table.py --check    # fail if either is out of date

Default paths are relative to the repository root, whatever the working
directory; explicit paths are taken as given.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from _gen import GenerationError, check_outputs, read_tsv, resolve, write_outputs
from _gen import command_line as regenerate_command

DEFAULT_FIELDS = "reference/dcgm/fields.tsv"
DEFAULT_OUTPUT = "native/node/field_table.c"
DEFAULT_IDS_OUTPUT = "native/dcgm_field_ids.h"

# Sizes of the char arrays in dcgm_field_meta_t / dcgm_field_output_format_t
# (native/dcgm_abi.h); each keeps one byte for the terminating NUL.
TAG_CAPACITY = 48
SHORT_NAME_CAPACITY = 10
UNIT_CAPACITY = 4

# DCGM registers fields of the kinds below; aliases share an id with their
# canonical row and must not produce a second table entry.
TABLE_KINDS = ("field", "internal")
# The ids header names these kinds: every field and the alias DCGM still
# uses (deprecated aliases, range markers and the null field stay out).
ID_KINDS = ("field", "internal", "alias")

FIELD_TYPES = {
    "b": "DCGM_FT_BINARY",
    "d": "DCGM_FT_DOUBLE",
    "i": "DCGM_FT_INT64",
    "s": "DCGM_FT_STRING",
    "t": "DCGM_FT_TIMESTAMP",
}
SCOPES = ("DCGM_FS_GLOBAL", "DCGM_FS_ENTITY")
ENTITY_LEVELS = (
    "DCGM_FE_NONE", "DCGM_FE_GPU", "DCGM_FE_VGPU", "DCGM_FE_SWITCH",
    "DCGM_FE_GPU_I", "DCGM_FE_GPU_CI", "DCGM_FE_LINK", "DCGM_FE_CPU",
    "DCGM_FE_CPU_CORE", "DCGM_FE_CONNECTX",
)

# The TSV does not record dmon column widths, so one is derived: wide enough
# for the header, and for the values a field of that type usually prints.
TYPICAL_VALUE_WIDTH = {"b": 20, "s": 20, "d": 7, "i": 7, "t": 20}


REQUIRED_COLUMNS = frozenset((
    "name", "field_id", "kind", "field_type", "field_type_char", "entity_level", "scope",
    "size_bytes", "tag", "nvml_field_id", "dmon_short_name", "dmon_unit", "in_meta_table",
))


@dataclass(frozen=True)
class FieldMeta:
    field_id: int
    name: str
    type_char: str
    size: int
    tag: str
    scope: str
    nvml_field_id: int
    entity_level: str
    short_name: str
    unit: str

    @property
    def width(self) -> int:
        return max(len(self.short_name), len(self.unit), TYPICAL_VALUE_WIDTH[self.type_char])


def truncate(text: str, capacity: int) -> str:
    """Cut text to what a char[capacity] holds with its NUL, as DCGM does."""
    encoded = text.encode("utf-8")[: capacity - 1]
    return encoded.decode("utf-8", errors="ignore")


def c_string(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in "\\\"":
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F and char != "?":  # '?' could start a trigraph
            out.append(char)
        else:
            out.append("\\%03o" % byte)
    return '"' + "".join(out) + '"'


def parse_int(text: str, what: str, line: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise GenerationError(f"line {line}: {what} {text!r} is not an integer") from None


def row_to_meta(row: dict, line: int) -> FieldMeta:
    type_char = row["field_type_char"]
    if type_char not in FIELD_TYPES:
        raise GenerationError(f"line {line}: unknown field type {type_char!r}")
    if FIELD_TYPES[type_char] != row["field_type"]:
        raise GenerationError(f"line {line}: field_type and field_type_char disagree")
    if row["scope"] not in SCOPES:
        raise GenerationError(f"line {line}: unknown scope {row['scope']!r}")
    if row["entity_level"] not in ENTITY_LEVELS:
        raise GenerationError(f"line {line}: unknown entity level {row['entity_level']!r}")
    size = parse_int(row["size_bytes"], "size_bytes", line)
    if not 0 <= size <= 255:
        raise GenerationError(f"line {line}: size {size} does not fit an unsigned char")
    if not row["tag"]:
        raise GenerationError(f"line {line}: empty tag")
    return FieldMeta(
        field_id=parse_int(row["field_id"], "field_id", line),
        name=row["name"],
        type_char=type_char,
        size=size,
        tag=truncate(row["tag"], TAG_CAPACITY),
        scope=row["scope"],
        nvml_field_id=parse_int(row["nvml_field_id"], "nvml_field_id", line),
        entity_level=row["entity_level"],
        short_name=truncate(row["dmon_short_name"], SHORT_NAME_CAPACITY),
        unit=truncate(row["dmon_unit"], UNIT_CAPACITY),
    )


def read_fields(path: Path) -> list[FieldMeta]:
    metas = [
        row_to_meta(row, line)
        for line, row in read_tsv(path, REQUIRED_COLUMNS)
        if row["in_meta_table"] == "yes" and row["kind"] in TABLE_KINDS
    ]
    return validated(sorted(metas, key=lambda meta: meta.field_id))


def validated(metas: list[FieldMeta]) -> list[FieldMeta]:
    if not metas:
        raise GenerationError("no rows with in_meta_table == yes")
    seen_ids: set[int] = set()
    seen_tags: set[str] = set()
    for meta in metas:
        if not 0 < meta.field_id < 65536:
            raise GenerationError(f"{meta.name}: id {meta.field_id} out of range")
        if meta.field_id in seen_ids:
            raise GenerationError(f"{meta.name}: id {meta.field_id} registered twice")
        if meta.tag in seen_tags:
            raise GenerationError(f"{meta.name}: tag {meta.tag!r} registered twice")
        seen_ids.add(meta.field_id)
        seen_tags.add(meta.tag)
    return metas


def read_ids(path: Path) -> list[tuple[str, int]]:
    """(name, id) of every DCGM_FI_* the ids header defines, in id order, then name order."""
    ids = [
        (row["name"], parse_int(row["field_id"], "field_id", line))
        for line, row in read_tsv(path, REQUIRED_COLUMNS)
        if row["kind"] in ID_KINDS
    ]
    names = [name for name, _ in ids]
    for name in names:
        if not name.startswith("DCGM_FI_") or not name.replace("_", "").isalnum():
            raise GenerationError(f"{name}: not a DCGM_FI_* macro name")
        if names.count(name) > 1:
            raise GenerationError(f"{name}: listed twice")
    return sorted(ids, key=lambda item: (item[1], item[0]))


def command_line(fields_arg: str) -> str:
    return regenerate_command("gen_field_table.py", ("--fields", fields_arg, DEFAULT_FIELDS))


def render_ids(ids: list[tuple[str, int]], fields_arg: str) -> str:
    width = max(len(name) for name, _ in ids)
    lines = [
        "/*",
        f" * GENERATED by `{command_line(fields_arg)}` from reference/dcgm/fields.tsv.",
        " * Do not edit: change the generator or the TSV and regenerate.",
        " *",
        " * The DCGM_FI_* ids of DCGM 4.6's dcgm_fields.h: every field and the alias",
        " * DCGM still uses, for the C sources that name a field by its id.",
        " * (DCGM_FI_MAX_FIELDS is in dcgm_abi.h.)",
        " */",
        "#ifndef DCGM_FIELD_IDS_H",
        "#define DCGM_FIELD_IDS_H",
        "",
    ]
    lines += [f"#define {name:<{width}} {field_id}" for name, field_id in ids]
    lines += ["", "#endif /* DCGM_FIELD_IDS_H */", ""]
    return "\n".join(lines)


def render(metas: list[FieldMeta], fields_arg: str) -> str:
    count = len(metas)
    tag_order = sorted(range(count), key=lambda index: metas[index].tag.encode("utf-8"))
    lines = [
        "/*",
        f" * GENERATED by `{command_line(fields_arg)}` from reference/dcgm/fields.tsv.",
        " * Do not edit: change the generator or the TSV and regenerate.",
        " *",
        f" * Metadata of the {count} field ids that DCGM 4.6 registers, in id order,",
        " * an id-indexed lookup and a tag-sorted index for binary search.  The",
        " * lookups live in fields_api.c.",
        " */",
        "#include \"node.h\"",
        "",
        "#define SIM_FIELD_COUNT %d" % count,
        "",
        "_Static_assert(%d < DCGM_FI_MAX_FIELDS, \"largest field id must index sim_field_by_id\");"
        % metas[-1].field_id,
        "",
        "/* Declared again in fields_api.c; hidden so only the version script's list is exported. */",
        "#define SIM_INTERNAL __attribute__((visibility(\"hidden\")))",
        "SIM_INTERNAL extern const unsigned int sim_field_count;",
        "SIM_INTERNAL extern const dcgm_field_meta_t sim_field_table[];",
        "SIM_INTERNAL extern const dcgm_field_meta_t *const sim_field_by_id[DCGM_FI_MAX_FIELDS];",
        "SIM_INTERNAL extern const unsigned short sim_field_tag_order[];",
        "",
        "const unsigned int sim_field_count = SIM_FIELD_COUNT;",
        "",
        "/*",
        " * Not const: dcgm_field_meta_t points at its format through a non-const",
        " * pointer, and a client writing through it must not hit read-only memory.",
        " */",
        "static dcgm_field_output_format_t sim_field_formats[SIM_FIELD_COUNT] = {",
    ]
    for meta in metas:
        lines.append(
            f"    {{{c_string(meta.short_name)}, {c_string(meta.unit)}, {meta.width}}}, /* {meta.field_id} */"
        )
    lines += ["};", "", "const dcgm_field_meta_t sim_field_table[SIM_FIELD_COUNT] = {"]
    for index, meta in enumerate(metas):
        lines.append(
            f"    {{{meta.field_id}, {FIELD_TYPES[meta.type_char]}, {meta.size}, {c_string(meta.tag)}, "
            f"{meta.scope}, {meta.nvml_field_id}, {meta.entity_level}, &sim_field_formats[{index}]}},"
            f" /* {meta.name} */"
        )
    lines += ["};", "", "const dcgm_field_meta_t *const sim_field_by_id[DCGM_FI_MAX_FIELDS] = {"]
    for index, meta in enumerate(metas):
        lines.append(f"    [{meta.field_id}] = &sim_field_table[{index}],")
    lines += ["};", "", "/* Indexes into sim_field_table, ordered by strcmp of the tags. */",
              "const unsigned short sim_field_tag_order[SIM_FIELD_COUNT] = {"]
    for start in range(0, count, 12):
        chunk = ", ".join(str(index) for index in tag_order[start:start + 12])
        lines.append(f"    {chunk},")
    lines += ["};", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fields", default=DEFAULT_FIELDS,
                        help="fields.tsv (default: %(default)s from the repository root)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help="C file to write (default: %(default)s from the repository root)")
    parser.add_argument("--ids-output", default=DEFAULT_IDS_OUTPUT,
                        help="C header of the field ids to write (default: %(default)s from the repository root)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the output is missing or stale")
    args = parser.parse_args(argv)
    try:
        metas = read_fields(resolve(args.fields, DEFAULT_FIELDS))
        ids = read_ids(resolve(args.fields, DEFAULT_FIELDS))
    except (OSError, GenerationError) as error:
        print(f"gen_field_table: {error}", file=sys.stderr)
        return 2
    output = resolve(args.output, DEFAULT_OUTPUT)
    ids_output = resolve(args.ids_output, DEFAULT_IDS_OUTPUT)
    outputs = {output: render(metas, args.fields), ids_output: render_ids(ids, args.fields)}
    if args.check:
        return check_outputs("gen_field_table", outputs, command_line(args.fields))
    write_outputs(outputs)
    print(f"gen_field_table: wrote {len(metas)} fields to {output} and {len(ids)} ids to {ids_output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
