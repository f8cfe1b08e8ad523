"""counters.csv: which DCGM fields to collect and how to expose them.

The grammar is dcgm-exporter 4.8's, so a file that works there works here
unchanged.  dcgm-exporter reads the file with Go's encoding/csv (comment
character '#'), and this module follows that reader rule for rule:

* A line whose first character is '#' is a comment.  A '#' anywhere else
  is data: "  # note" is a record, and a "# ..." after the help text is part
  of the help.
* Empty lines are skipped (a line of spaces is not empty: it is a record).
* Lines end at "\\n"; a "\\r" right before it (or at the end of the file) is
  dropped, any other "\\r" is data.
* Fields are separated by ','.  A field that starts with '"' is quoted
  (RFC 4180): it ends at the next lone '"', '""' stands for one '"', and it
  may hold commas and line breaks.  After its closing quote comes ',' or the
  end of the line, nothing else.  A '"' inside an unquoted field is an
  error, and so is a quote after leading spaces (' "help"'), because the
  field then does not start with the quote.
* Every field is then trimmed of spaces, and only spaces: a tab stays.
* Column 1 is a DCGM field name (current, deprecated alias or legacy, see
  :mod:`dcgm_collector.catalog.fields`) or one of :data:`EXPORTER_COUNTERS`;
  column 2 the Prometheus type, one of :data:`PROM_TYPES` (case-sensitive;
  any text for a DCGM_EXP_* row, which dcgm-exporter does not check);
  column 3 the help text.

Differences, all on purpose:

* Extension: an optional fourth column lists the window aggregates exposed
  for the row, any of ``min``, ``max``, ``avg`` separated by '|'
  (e.g. ``DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C)., max|avg``).
  Go fixes the field count with the first record; here every record may
  have 3 or 4 fields independently, and any other count is an error.
* Two rows for one field (or one DCGM_EXP_* counter), as in NVIDIA's
  1.x-compatibility file: the first row is used and the later one is
  skipped with a warning naming both lines (dcgm-exporter would watch the
  field twice and serve two families).
* Rejected here, accepted by dcgm-exporter: a string field with a type other
  than ``label`` (its samples would not be numbers), any binary field (no
  value a sample or label could show), and ``DCGM_FI_UNKNOWN`` (DCGM's
  "no field" placeholder, id 0: nothing to collect).
* A UTF-8 byte order mark at the start of the file is ignored.
* Errors name the real line of the file (1-based), where dcgm-exporter
  counts records.

Typical use::

    counters = load_counters("default-counters.csv")
    counters = counters.without_unsupported_profiling(supported_ids, log.warning)
    watch(counters.field_ids())
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dcgm_collector.catalog.fields import PACKAGE_DATA, Field, FieldTable, field_table
from dcgm_collector.files import FileRefused, read_regular_file

__all__ = [
    "AGGREGATIONS",
    "EXPORTER_COUNTERS",
    "MAX_COUNTERS_FILE_BYTES",
    "PROM_TYPES",
    "aggregations_argument",
    "Counter",
    "CounterSet",
    "CountersError",
    "default_counters_path",
    "load_counters",
    "parse_counters",
]

EXPORTER_COUNTERS = (
    "DCGM_EXP_XID_ERRORS_COUNT",
    "DCGM_EXP_CLOCK_EVENTS_COUNT",
    "DCGM_EXP_GPU_HEALTH_STATUS",
    "DCGM_EXP_P2P_STATUS",
)
PROM_TYPES = ("gauge", "counter", "histogram", "summary", "label")
AGGREGATIONS = ("min", "max", "avg")
PLACEHOLDER_NAMES = ("DCGM_FI_UNKNOWN",)
SHIPPED_FILES = ("default-counters.csv", "dcp-metrics.csv")
# dcgm-exporter's files are about 10 KB; the bound keeps a wrong path (a log, a disk image) from being read whole
MAX_COUNTERS_FILE_BYTES = 1 << 20

BOM = "\ufeff"
COMMENT = "#"
QUOTE = '"'
SEPARATOR = ","
AGGREGATION_SEPARATOR = "|"


def aggregations_argument(text: str) -> tuple[str, ...]:
    """A command line's aggregation list (``min,max`` or ``min|max``, any case) -> a subset of AGGREGATIONS."""
    chosen = []
    for part in text.replace("|", ",").split(","):
        name = part.strip().lower()
        if not name:
            continue
        if name not in AGGREGATIONS:
            raise argparse.ArgumentTypeError(
                f"unknown aggregation {part.strip()!r}; choose from {', '.join(AGGREGATIONS)}")
        chosen.append(name)
    return tuple(a for a in AGGREGATIONS if a in chosen)


class CountersError(ValueError):
    """A counters file the collector cannot use; str() is ``path:line: message``, or ``path: message``
    when the problem is the file itself (line None)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}: {message}" if line is None else f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Counter:
    name: str                      # column 1 exactly as written: the metric name
    field: Field | None            # None for DCGM_EXP_* rows
    exporter: str | None           # the DCGM_EXP_* name, else None
    prom_type: str                 # column 2; one of PROM_TYPES except on DCGM_EXP_* rows
    help: str
    aggregations: tuple[str, ...]  # from column 4: a subset of AGGREGATIONS, in that order
    path: str
    line: int                      # where the row starts in the file (1-based)

    @property
    def is_label(self) -> bool:
        return self.field is not None and self.prom_type == "label"

    @property
    def served_type(self) -> str:
        """The TYPE served: column 2, except that a counter whose DCGM value can go down is served as a gauge."""
        if self.prom_type == "counter" and self.field is not None and self.field.not_a_running_total:
            return "gauge"
        return self.prom_type


@dataclass(frozen=True)
class CounterSet:
    path: str
    counters: tuple[Counter, ...]
    warnings: tuple[str, ...] = ()   # ``path:line: ...`` lines about rows the file names but the set leaves out

    def __len__(self) -> int:
        return len(self.counters)

    def __iter__(self) -> Iterator[Counter]:
        return iter(self.counters)

    def field_counters(self) -> tuple[Counter, ...]:
        """DCGM-backed rows that become series."""
        return tuple(c for c in self.counters if c.field is not None and c.prom_type != "label")

    def label_counters(self) -> tuple[Counter, ...]:
        """DCGM-backed rows whose value labels every series of the entity."""
        return tuple(c for c in self.counters if c.is_label)

    def running_totals(self) -> tuple[Counter, ...]:
        """Field rows typed counter: the ones --aggregations leaves without window families."""
        return tuple(c for c in self.field_counters() if c.served_type == "counter")

    def counters_served_as_gauges(self) -> tuple[Counter, ...]:
        """Rows typed counter whose DCGM values can go down (rates, states): served as gauges."""
        return tuple(c for c in self.field_counters() if c.served_type != c.prom_type)

    def exporter_counters(self) -> tuple[Counter, ...]:
        return tuple(c for c in self.counters if c.exporter is not None)

    def field_ids(self) -> tuple[int, ...]:
        """Every DCGM field to watch (values and labels), each once, in file order."""
        ids: dict[int, None] = {}
        for counter in self.counters:
            if counter.field is not None:
                ids.setdefault(counter.field.id, None)
        return tuple(ids)

    def without_unsupported_profiling(self, supported: set[int] | frozenset[int],
                                      warn: Callable[[str], None]) -> CounterSet:
        """This set less the profiling rows whose field is not in ``supported``;
        ``warn`` gets one line per dropped row."""
        kept = []
        for counter in self.counters:
            field = counter.field
            if field is not None and field.is_profiling and field.id not in supported:
                warn(f"{counter.path}:{counter.line}: skipping {counter.name}: "
                     "profiling metric not supported by the GPUs")
            else:
                kept.append(counter)
        return CounterSet(self.path, tuple(kept), self.warnings)


def quoted(text: str) -> str:
    """``text`` in double quotes, escaped so that the result is one printable line."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return '"' + "".join(out) + '"'


# --- the CSV layer: Go encoding/csv's rules, with real line numbers ----------

def split_lines(text: str) -> list[str]:
    """Lines as Go's csv reader sees them: split at "\\n" only, one trailing "\\r" dropped."""
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()  # the text ended with a newline: no line after it
    return [piece[:-1] if piece.endswith("\r") else piece for piece in pieces]


class _RecordReader:
    def __init__(self, text: str, path: str) -> None:
        self.lines = split_lines(text)
        self.path = path
        self.next_index = 0  # index into lines of the next unread line

    def error(self, line: int, message: str) -> CountersError:
        return CountersError(self.path, line, message)

    def records(self) -> Iterator[tuple[int, list[str]]]:
        """(line the record starts on, its raw fields), skipping comments and blank lines."""
        while self.next_index < len(self.lines):
            line = self.lines[self.next_index]
            self.next_index += 1
            if line == "" or line.startswith(COMMENT):
                continue
            yield self.next_index, self.read_record(line, self.next_index)

    def read_record(self, line: str, line_number: int) -> list[str]:
        fields: list[str] = []
        pos = 0
        while True:
            if line.startswith(QUOTE, pos):
                field, line, line_number, pos, more = self.read_quoted(line, line_number, pos + 1)
            else:
                field, pos, more = self.read_unquoted(line, line_number, pos)
            fields.append(field)
            if not more:
                return fields

    def read_unquoted(self, line: str, line_number: int, pos: int) -> tuple[str, int, bool]:
        end = line.find(SEPARATOR, pos)
        field = line[pos:] if end < 0 else line[pos:end]
        if QUOTE in field:
            hint = " after leading spaces" if field.lstrip(" ").startswith(QUOTE) else ""
            column = pos + field.index(QUOTE) + 1
            raise self.error(line_number, f"quote inside an unquoted field{hint} (column {column}); "
                                          "a quoted field must start right after the comma, "
                                          'and a quote inside it is written ""')
        return field, end + 1, end >= 0

    def read_quoted(self, line: str, line_number: int, pos: int) -> tuple[str, str, int, int, bool]:
        opened_on = line_number
        parts: list[str] = []
        while True:
            close = line.find(QUOTE, pos)
            if close < 0:
                parts.append(line[pos:])
                if self.next_index >= len(self.lines):
                    raise self.error(opened_on, "quoted field is never closed")
                parts.append("\n")
                line = self.lines[self.next_index]
                self.next_index += 1
                line_number = self.next_index
                pos = 0
                continue
            parts.append(line[pos:close])
            after = close + 1
            if line.startswith(QUOTE, after):
                parts.append(QUOTE)
                pos = after + 1
                continue
            if after == len(line):
                return "".join(parts), line, line_number, after, False
            if line[after] == SEPARATOR:
                return "".join(parts), line, line_number, after + 1, True
            raise self.error(line_number, f"unexpected {quoted(line[after])} after the closing quote of a field "
                                          f'(column {after + 1}); a quote inside a quoted field is written ""')


# --- the counters layer --------------------------------------------------------

def _field_count_problem(fields: list[str]) -> str:
    count = len(fields)
    message = f"expected 3 fields (name, type, help) or 4 (name, type, help, aggregations), found {count}"
    if count == 1 and fields[0].lstrip(" \t").startswith(COMMENT):
        message += f"; a comment's {COMMENT!r} must be the first character of the line"
    elif count > 4:
        message += "; put help text that contains commas in double quotes"
    return message


class _CounterBuilder:
    def __init__(self, path: str, table: FieldTable) -> None:
        self.path = path
        self.table = table
        self.counters: list[Counter] = []
        self.seen: dict[int | str, Counter] = {}  # field id or DCGM_EXP_* name -> first row
        self.warnings: list[str] = []

    def error(self, line: int, message: str) -> CountersError:
        return CountersError(self.path, line, message)

    def add(self, line: int, raw_fields: list[str]) -> None:
        if len(raw_fields) not in (3, 4):
            raise self.error(line, _field_count_problem(raw_fields))
        fields = [field.strip(" ") for field in raw_fields]
        name, prom_type, help_text = fields[:3]
        field = self.resolve(line, name)
        exporter = None if field is not None else name
        if field is not None:
            self.check_field_type(line, name, field, prom_type)
        aggregations = self.aggregations(line, name, field, prom_type, fields[3]) if len(fields) == 4 else ()
        key: int | str = field.id if field is not None else name
        if self.is_duplicate(line, name, key):
            return
        counter = Counter(name=name, field=field, exporter=exporter, prom_type=prom_type, help=help_text,
                          aggregations=aggregations, path=self.path, line=line)
        self.seen[key] = counter
        self.counters.append(counter)

    def resolve(self, line: int, name: str) -> Field | None:
        """The DCGM field ``name`` means, or None for a DCGM_EXP_* counter."""
        field = self.table.lookup(name)
        if field is not None:
            return field
        if name in EXPORTER_COUNTERS:
            return None
        if name in PLACEHOLDER_NAMES:
            raise self.error(line, f'{name} is DCGM\'s "no field" placeholder (id 0): there is nothing to collect')
        if name == "":
            raise self.error(line, "missing field name")
        message = f"unknown field name {quoted(name)}"
        if self.table.lookup(name.strip(" \t")) is not None:
            message += " (only spaces around a field are trimmed, not tabs)"
        suggestions = self.table.closest(name, extra_names=EXPORTER_COUNTERS)
        if suggestions:
            message += "; closest: " + ", ".join(suggestions)
        else:
            message += " (not a DCGM field name, alias or legacy name, nor a DCGM_EXP_* counter)"
        raise self.error(line, message)

    def check_field_type(self, line: int, name: str, field: Field, prom_type: str) -> None:
        if prom_type not in PROM_TYPES:
            message = f"unknown metric type {quoted(prom_type)} for {name}; expected one of {', '.join(PROM_TYPES)}"
            if prom_type.lower() in PROM_TYPES:
                message += f" (case-sensitive: did you mean {prom_type.lower()}?)"
            raise self.error(line, message)
        if field.type == "b":
            raise self.error(line, f"{name} is a binary field: it has no value a metric or label can show")
        if field.type == "s" and prom_type != "label":
            raise self.error(line, f"{name} is a string field, so it can only be a label, not a {prom_type}")

    def aggregations(self, line: int, name: str, field: Field | None, prom_type: str, column: str) -> tuple[str, ...]:
        if column == "":
            raise self.error(line, "empty fourth column; remove the trailing comma or list aggregations (min|max|avg)")
        if field is None:
            raise self.error(line, f"{name}: aggregations are not available for DCGM_EXP_* counters")
        if prom_type == "label":
            raise self.error(line, f"{name}: a label row cannot have aggregations")
        if prom_type == "counter" and not (field is not None and field.not_a_running_total):
            # the min, max or average of a running total says nothing; its increase is Prometheus' increase()
            raise self.error(line, f"{name} is a counter: window aggregates (min|max|avg) are for gauges; "
                                   "query a counter with increase() or rate()")
        chosen: list[str] = []
        for part in column.split(AGGREGATION_SEPARATOR):
            aggregation = part.strip(" ")
            if aggregation not in AGGREGATIONS:
                raise self.error(line, f"unknown aggregation {quoted(aggregation)}; expected "
                                       f"{', '.join(AGGREGATIONS)} separated by {AGGREGATION_SEPARATOR!r}")
            if aggregation in chosen:
                raise self.error(line, f"aggregation {aggregation} listed twice")
            chosen.append(aggregation)
        return tuple(a for a in AGGREGATIONS if a in chosen)

    def is_duplicate(self, line: int, name: str, key: int | str) -> bool:
        """Whether an earlier row has this field (or DCGM_EXP_* counter); if so, warn that this row is skipped."""
        first = self.seen.get(key)
        if first is None:
            return False
        what = f"field {key}" if isinstance(key, int) else name
        also = "" if first.name == name else f" as {first.name}"
        self.warnings.append(f"{self.path}:{line}: {name} is {what}, already listed at line {first.line}{also}: "
                             f"using line {first.line}, skipping line {line}")
        return True


def parse_counters(text: str, path: str = "<string>", table: FieldTable | None = None) -> CounterSet:
    """Parse the text of a counters file; every problem is a :class:`CountersError`."""
    if text.startswith(BOM):
        text = text[len(BOM):]
    builder = _CounterBuilder(path, table if table is not None else field_table())
    for line, raw_fields in _RecordReader(text, path).records():
        builder.add(line, raw_fields)
    if not builder.counters:
        what = "the file is empty" if text.strip(" \t\r\n") == "" else "the file holds only comments and blank lines"
        raise CountersError(path, 1, f"no counters defined: {what}")
    return CounterSet(path, tuple(builder.counters), tuple(builder.warnings))


def load_counters(path: str | os.PathLike[str], table: FieldTable | None = None) -> CounterSet:
    """Read and parse a counters file (UTF-8).  OSError if it cannot be read.

    Only a regular file of at most MAX_COUNTERS_FILE_BYTES is read; anything
    else (a FIFO, a device, a directory, a huge file) is a CountersError.
    """
    name = os.fspath(path)
    try:
        data = read_regular_file(name, MAX_COUNTERS_FILE_BYTES)
    except FileRefused as refused:
        raise CountersError(name, None, refused.problem) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CountersError(name, line, f"not UTF-8 text (byte 0x{data[error.start]:02x})") from None
    return parse_counters(text, name, table)


def default_counters_path(name: str = "default-counters.csv") -> str:
    """Path of a counters file shipped in the package: default-counters.csv or dcp-metrics.csv."""
    if name not in SHIPPED_FILES:
        raise ValueError(f"no shipped counters file {name!r}; there are {', '.join(SHIPPED_FILES)}")
    return str(PACKAGE_DATA / name)
