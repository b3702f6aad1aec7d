# A job's cycle under the real unix `micropython` (tests/mpy/fw_job_alloc.py): every move comes
# from the plans made at the job's start (retries included), and the firmware's ticks allocate
# little enough that no automatic collection can land inside a tick during the cycle.
import pytest

from tests.support import mpy as host_helpers

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")

# Heap the firmware's ticks may take during one cycle, on this 64-bit port (objects on the
# RP2040's 32-bit port are about half as big). The RP2040's free heap after the job's collection
# is far above it (docs/rp2040.md); a move planned inside a tick
# alone takes about 30 KB here.
CYCLE_BUDGET_BYTES = 16 * 1024
TICK_BUDGET_BYTES = 2 * 1024


@pytest.mark.parametrize("scenario,attempts,moves,fault", [("nominal", 1, 6, 0),
                                                          ("switch_stuck_open", 3, 9, 33),
                                                          ("part_missing", 3, 9, 32)])
def test_a_cycle_plans_nothing_and_allocates_within_budget(scenario, attempts, moves, fault, tmp_path):
    proc = host_helpers.run("fw_job_alloc.py", scenario, tmp_path, timeout=180)
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0 and "END" in text and "Traceback" not in text, text[-3000:]
    res = host_helpers.results(text)
    assert res["attempts"] == attempts and res["fault"] == fault and res["moves"] == moves, res
    assert res["plan_hits"] == moves, res              # no move planned inside a tick
    assert res["collections_in_cycle"] == 0, res
    assert res["fw_tick_alloc_max_bytes"] <= TICK_BUDGET_BYTES, res
    assert 0 < res["fw_cycle_alloc_bytes"] <= CYCLE_BUDGET_BYTES, res
