# docs/bench-states.md's table is the one in host/board_state.py: every state, whether it refuses
# a job and whether stopping the firmware is unsafe in it, and every command of its way out.
import re
from pathlib import Path

from surepick.host import board_state

DOC = Path(__file__).resolve().parents[2] / "docs" / "bench-states.md"


def _rows():
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `(\w+)` \|(.*)\|\s*$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split(" | ")]
            rows[m.group(1)] = cells
    return rows


def test_the_docs_table_is_the_codes():
    rows = _rows()
    assert sorted(rows) == sorted(e.key for e in board_state.TABLE)
    for e in board_state.TABLE:
        shows, blocks, unsafe, way_out = rows[e.key]
        assert (blocks, unsafe) == ("yes" if e.blocks_job else "no", "yes" if e.unsafe_reset else "no"), e.key
        for command in re.findall(r"`(surepick [^`]+)`", board_state.way_out(e)):
            assert "`%s`" % command in way_out, (e.key, command, way_out)
