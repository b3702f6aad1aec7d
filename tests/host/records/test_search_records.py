# A part search's steps on their way to the host and into a run record: an EVENT frame carries
# a search step's positions (docs/protocol.md), events.csv keeps them and is checked by kind
# (record_schema.py), and a reading out of its range is still refused on the other kinds.
import csv
import io

import pytest

from surepick.host.records import record_schema as schema
from surepick.host.records.runrecord import EVENT_COLUMNS, event_rows
from surepick.shared_fsm import codes, link, states

SEARCH = (9, 10328, codes.K_SEARCH, states.APPROACH, states.APPROACH, codes.R_FOUND, 1,
          179661, -67373, 15500, 0, 18000)
NOTE = (10, 10376, codes.K_NOTE, states.APPROACH, states.APPROACH, codes.R_RESENSED, 1,
        55985, 0, -2, 0, 0)


def test_an_event_frame_carries_a_search_step():
    f = link.event(SEARCH)
    assert f is not None
    err, ftype, fields = link.decode(f)
    assert err == link.OK and ftype == link.T_EVENT and tuple(fields) == SEARCH


def _rows(events):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(EVENT_COLUMNS)
    w.writerows(event_rows(0, events))
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    return rows[0], rows[1:]


def test_events_csv_keeps_a_search_step_and_checks_it_by_kind():
    header, rows = _rows([SEARCH, NOTE])
    idx = {c: i for i, c in enumerate(header)}
    assert [schema.event_row(r, idx)[1] for r in rows] == [SEARCH, NOTE]
    # a search row's x_um out of reach of any arm: named as what it is
    bad = list(rows[0])
    bad[idx["pot_counts"]] = "2000000"
    with pytest.raises(schema.FieldError, match="x_um"):
        schema.event_row(bad, idx)
    # a note's pot reading of 179661 is still not a pot reading
    bad = list(rows[1])
    bad[idx["pot_counts"]] = "179661"
    with pytest.raises(schema.FieldError, match="pot_counts"):
        schema.event_row(bad, idx)
