# RUN's 24-field schema (shared_fsm/run_frame.py) is not in a board's heap until the first RUN
# arrives (link.load_run_frame, docs/production-run.md "Heap"): the real main loop under the
# unix `micropython` with the stand-in HAL; the host (CPython) has it from the start.
import pytest

from surepick.shared_fsm import link
from tests.support import mpy as host_helpers

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def test_a_board_reads_run_once_the_first_run_arrives(tmp_path):
    assert link.T_RUN in link.SCHEMA
    # a RUN with a 1 by 0 pick grid: decoded, then refused by the board for its grid
    # (fields after req_id, docs/protocol.md: 9 width_um, 13 pick_nx, 14 pick_ny, 17/18 place's)
    fields = [0] * 23
    fields[9] = 25000
    fields[13] = 1
    fields[17], fields[18] = 1, 1
    frame = link.request(link.T_RUN, 5, fields)
    assert frame is not None
    proc = host_helpers.run("fw_run_frame.py", tmp_path, frame.hex(), timeout=120)
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in text, text[-3000:]
    res = host_helpers.results(text)
    assert res == {"schema_at_boot": 0, "schema_after_status": 0, "schema_after_run": 1,
                   "production_loaded": 1}, text[-3000:]
    replies = [l.split()[1:] for l in text.splitlines() if l.startswith("REPLY ")]
    assert ["3", str(link.OK), "0"] in replies            # RUN_STATUS: no run since boot
    assert ["5", str(link.E_BAD_VALUE), "grid"] in replies
