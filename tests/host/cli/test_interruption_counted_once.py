# Item 5 of the bench-day issue, on the board: one interrupted job is logged and counted once.
# The virtual board browns out in LIFT (scenario brownout_mid_lift): the rail sags (RAIL_LOW
# latches: the cycle has failed), then the controller resets and latches INTERRUPTED. The job marker stays until a human clears the fault, so every later boot
# finds it again; three deploys (each a soft reset) must not log or count it again. Before the
# fix, `log stats` and the board's counters grew by one per boot.
import time

from tests.support.board_cli import running_board
from tests.support.cli import surepick
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


def test_one_interruption_three_soft_resets_one_fault(tmp_path):
    with running_board(tmp_path / "flash", "brownout_mid_lift", 1) as port:
        r = surepick("job", "start", "--wait", "--timeout", "90", "--port", port, timeout=200)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "cycle ended: fault RAIL_LOW (in LIFT" in r.stdout, r.stdout
        deadline = time.monotonic() + 60
        status = ""
        while "fault INTERRUPTED" not in status and time.monotonic() < deadline:
            time.sleep(0.5)
            status = surepick("job", "status", "--port", port).stdout
        assert "fault INTERRUPTED" in status, status
        r = surepick("deploy", "--quiet", "--port", port, timeout=200)
        assert r.returncode == 1 and "not deploying" in r.stderr      # a part held, the arm unpowered
        for _ in range(3):                                            # soft resets asked for explicitly
            r = surepick("deploy", "--quiet", "--force", "--port", port, timeout=200)
            assert r.returncode == 0, r.stdout + r.stderr
        r = surepick("job", "status", "--port", port)
        assert "fault INTERRUPTED, cycles ok 0 failed 1, faults 1," in r.stdout, r.stdout
        db = tmp_path / "m.db"
        r = surepick("monitor", "--plain", "--seconds", "6", "--db", db, "--port", port, timeout=120)
        assert r.returncode == 0, r.stderr
    r = surepick("log", "stats", "--db", db)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "cycles ok 0, failed 1," in lines[0], r.stdout
    faults = lines[lines.index("faults by code:") + 1:lines.index("faults by state:") - 1]
    assert [f.split() for f in faults] == [["INTERRUPTED", "1"]], r.stdout
