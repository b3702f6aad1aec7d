# docs/run-record.md is the run-record format's description for people; records/record_schema.py
# is what every verb checks. They must say the same: the required fields of run.json and
# cycles.jsonl, and the range of every ticks.csv column, are read from the page and compared.
import re

from surepick.host.records import record_schema as schema
from tests.conftest import REPO
from surepick.host.records.runrecord import TICK_COLUMNS

DOC = REPO / "docs" / "run-record.md"


def _section(title):
    text = DOC.read_text()
    start = text.index(title)
    return text[start:text.index("\n## ", start + 1)]


def _table_after(section, heading):
    # -> rows (lists of cells) of the first table after `heading` inside `section`
    part = section[section.index(heading):]
    rows = []
    for line in part.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def _bold(rows):
    return {m for r in rows for m in re.findall(r"\*\*(\w+)\*\*", r[0])}


def test_required_run_json_fields_match():
    rows = _table_after(_section("## Fields and types"), "`run.json` (required")
    assert _bold(rows) == {n for n, req, _ in schema.META_FIELDS if req}
    named = {w for r in rows for w in re.findall(r"\w+", r[0])}
    assert {n for n, _, _ in schema.META_FIELDS} <= named


def test_required_cycle_fields_match():
    rows = _table_after(_section("## Fields and types"), "`cycles.jsonl`, one object")
    assert _bold(rows) == {n for n, req, _ in schema.CYCLE_FIELDS if req}
    job = next(r for r in rows if r[0] == "**job**")[1]
    assert set(re.findall(r"\*\*(\w+)\*\*", job)) == {n for n, req, _ in schema.JOB_FIELDS if req}
    restarts = next(r for r in rows if r[0] == "restarts")[1]
    assert set(re.findall(r"\*\*(\w+)\*\*", restarts)) == {n for n, req, _ in schema.RESTART_FIELDS if req}
    named = {w for r in rows for w in re.findall(r"\w+", r[0])}
    assert {n for n, _, _ in schema.CYCLE_FIELDS} <= named


def test_every_tick_column_has_the_documented_range():
    rows = _table_after(_section("## Fields and types"), "`ticks.csv`: UTF-8 text")
    doc = {r[0]: tuple(int(x) for x in re.match(r"(-?\d+)\.\.(-?\d+)$", r[1]).groups()) for r in rows}
    assert list(doc) == list(TICK_COLUMNS)
    assert doc == schema.TICK_RANGES
