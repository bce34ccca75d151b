"""The session store's tables, their numbered migrations, and the one declaration of the
columns search and the timeline filter on (SEARCH_COLUMNS: the DDL, the migration that added
them, the insert, the check and the reads are all derived from it).

Schema history (each number's migration brings the one before it up to it, in order):
  2: text records without checksums;
  3: records, snapshots, heads and events zlib-compressed with a CRC-32; the search columns;
  4: a CRC-32 on every other row a reader trusts (ROW_COLUMNS), over its key and values;
  5: cycle records may be deflated against a second dictionary, a steady-state record (codec.py,
     tag 4), which a schema-4 reader does not know: the rows themselves are unchanged;
  6: a world's steps (store/worldstore.py) are packed against dictionaries of their own (tags 5
     and 6), with a checksum over the key and the packed bytes; rows written before stay text.
Every readable schema is read as it is; a store opened for writing is migrated in place.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

SCHEMA_VERSION = "6"
READABLE_SCHEMAS = ("2", "3", "4", "5", "6")


@dataclass(frozen=True)
class SearchColumn:
    """A field of a cycle record kept in a column of its own, for search, the timeline's
    marks and the provenance a lean snapshot leaves out."""

    name: str
    sql_type: str
    path: str  # where it sits in the record, as SQLite's json_extract names it
    of: Callable[[Mapping[str, Any]], Any]  # the column's value for a record


# The order is the cycles table's column order after `crc`, and the order of `search_columns`.
SEARCH_COLUMNS = (
    SearchColumn("tool", "TEXT", "$.decide.tool", lambda r: r["decide"]["tool"]),
    SearchColumn("vetoed", "INTEGER", "$.act.vetoed", lambda r: int(bool(r["act"]["vetoed"]))),
    SearchColumn("veto", "TEXT", "$.act.veto", lambda r: r["act"].get("veto")),
    SearchColumn("goal", "INTEGER", "$.goal.id", lambda r: r["goal"]["id"]),
    SearchColumn("progress", "TEXT", "$.act.progress", lambda r: r["act"].get("progress")),
)
SEARCH_NAMES = tuple(c.name for c in SEARCH_COLUMNS)
SEARCH_PATHS = {c.name: c.path for c in SEARCH_COLUMNS}
SEARCH_LIST = ", ".join(SEARCH_NAMES)  # "tool, vetoed, veto, goal, progress" for a SELECT or INSERT


def search_columns(record: Mapping[str, Any]) -> tuple:
    """The record's SEARCH_COLUMNS values, in their order."""
    return tuple(c.of(record) for c in SEARCH_COLUMNS)


_SEARCH_DDL = ", ".join(f"{c.name} {c.sql_type}" for c in SEARCH_COLUMNS)
SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, crc INTEGER);
CREATE TABLE runs (id INTEGER PRIMARY KEY, meta TEXT NOT NULL, crc INTEGER);
CREATE TABLE branches (id INTEGER PRIMARY KEY, run INTEGER NOT NULL, name TEXT NOT NULL, parent INTEGER,
    fork_cycle INTEGER, fork_sizes TEXT, edits TEXT NOT NULL DEFAULT '[]', crc INTEGER, UNIQUE (run, name));
CREATE TABLE symbols (branch INTEGER NOT NULL, id INTEGER NOT NULL, label TEXT NOT NULL, kind TEXT NOT NULL,
    crc INTEGER, PRIMARY KEY (branch, id));
CREATE TABLE triples (branch INTEGER NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL, crc INTEGER,
    PRIMARY KEY (branch, seq));
CREATE TABLE episodes (branch INTEGER NOT NULL, id INTEGER NOT NULL, payload TEXT NOT NULL, crc INTEGER,
    PRIMARY KEY (branch, id));
CREATE TABLE cycles (branch INTEGER NOT NULL, cycle INTEGER NOT NULL, record TEXT NOT NULL, crc INTEGER,
    {_SEARCH_DDL}, PRIMARY KEY (branch, cycle));
CREATE INDEX cycles_vetoed ON cycles (branch, cycle) WHERE vetoed;
CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, branch INTEGER NOT NULL, cycle INTEGER NOT NULL,
    input INTEGER NOT NULL, event TEXT NOT NULL, crc INTEGER, type TEXT);
CREATE INDEX events_by_branch ON events (branch, cycle);
CREATE INDEX events_by_type ON events (branch, type);  -- resume reads the psyche edits only
CREATE TABLE inputs (seq INTEGER PRIMARY KEY AUTOINCREMENT, branch INTEGER NOT NULL, cycle INTEGER NOT NULL,
    kind TEXT NOT NULL, payload TEXT NOT NULL, crc INTEGER);
CREATE INDEX inputs_by_branch ON inputs (branch, cycle);
CREATE TABLE snapshots (branch INTEGER NOT NULL, cycle INTEGER NOT NULL, payload TEXT NOT NULL, crc INTEGER,
    PRIMARY KEY (branch, cycle));
CREATE TABLE heads (branch INTEGER PRIMARY KEY, cycle INTEGER NOT NULL, inputs_seq INTEGER NOT NULL, payload TEXT NOT NULL,
    crc INTEGER);
"""
TABLES = ("meta", "runs", "branches", "symbols", "triples", "episodes", "cycles", "events", "inputs", "snapshots", "heads")
BRANCH_TABLES = ("symbols", "triples", "episodes", "cycles", "events", "inputs", "snapshots", "heads")

# Schema 4: the rows a reader trusts besides the records get a checksum too (a bit flipped in a
# run's metadata was a JSONDecodeError, in the dictionary a traceback). A row's checksum covers
# its key columns and its values (`row_crc`, in ROW_COLUMNS order), so a flipped key is caught
# as well. Rows of an older store keep the checksum the migration computes from them as they are.
ROW_COLUMNS = {
    "meta": ("key", "value"),
    "runs": ("id", "meta"),
    "branches": ("id", "run", "name", "parent", "fork_cycle", "fork_sizes", "edits"),
    "symbols": ("branch", "id", "label", "kind"),
    "triples": ("branch", "seq", "payload"),
    "episodes": ("branch", "id", "payload"),
    "inputs": ("branch", "cycle", "kind", "payload"),  # not seq: it is numbered by the insert
}


def row_crc(*values: Any) -> int:
    """The checksum of a row of ROW_COLUMNS: its values as text, separated by a unit
    separator (a value of another type, say a flipped text turned integer, does not match)."""
    return zlib.crc32("\x1f".join([v if isinstance(v, str) else repr(v) for v in values]).encode("utf-8", "surrogatepass"))


ROW_CRC_FUNCTION = "akh_row_crc"  # `row_crc` as an SQL function, registered on a writer's connection

# Each schema number's migration from the one before it: statements run in one transaction.
MIGRATIONS: dict[str, str] = {
    "3": "ALTER TABLE cycles ADD COLUMN crc INTEGER;\n"
    + "".join(f"ALTER TABLE cycles ADD COLUMN {c.name} {c.sql_type};\n" for c in SEARCH_COLUMNS)
    + "UPDATE cycles SET " + ", ".join(f"{c.name} = json_extract(record, '{c.path}')" for c in SEARCH_COLUMNS) + ";\n"
    + """CREATE INDEX cycles_vetoed ON cycles (branch, cycle) WHERE vetoed;
ALTER TABLE snapshots ADD COLUMN crc INTEGER;
ALTER TABLE heads ADD COLUMN crc INTEGER;
ALTER TABLE events ADD COLUMN crc INTEGER;
ALTER TABLE events ADD COLUMN type TEXT;
UPDATE events SET type = json_extract(event, '$.type');
CREATE INDEX events_by_type ON events (branch, type);
""",
    "4": "".join(f"ALTER TABLE {t} ADD COLUMN crc INTEGER;\nUPDATE {t} SET crc = {ROW_CRC_FUNCTION}({', '.join(cols)});\n"
                 for t, cols in ROW_COLUMNS.items()),
    "5": "",  # only the number: it tells an older reader it cannot read the new dictionary's values
    "6": "",  # the same: an older reader would take a packed step for damage (or fail on its bytes)
}


def migration_steps(old: str) -> list[str]:
    """The statements that bring a schema-`old` store to SCHEMA_VERSION, in order."""
    numbers = [n for n in sorted(MIGRATIONS, key=int) if int(old) < int(n) <= int(SCHEMA_VERSION)]
    return [s for n in numbers for s in MIGRATIONS[n].split(";") if s.strip()]
