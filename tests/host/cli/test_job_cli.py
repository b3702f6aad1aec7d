# `surepick job` against the firmware on the virtual board wired to the MuJoCo plant: a job
# started from the command line runs to PLACED; status, abort and clear behave.
import subprocess
import time

import pytest

from tests.support.cli import SUREPICK_BIN
from tests.support.board_cli import running_board
from tests.support.held_plant import held_board

SUREPICK = [SUREPICK_BIN]


@pytest.fixture
def board(tmp_path, request):
    with running_board(tmp_path / "flash", getattr(request, "param", "nominal"), 2) as port:
        yield port


def _job(args, timeout=120):
    return subprocess.run(SUREPICK + ["job"] + args, capture_output=True, text=True, timeout=timeout)


def test_job_start_wait_places_the_part(board):
    r = _job(["status", "--port", board])
    assert r.returncode == 0 and r.stdout.startswith("state IDLE"), r.stdout + r.stderr
    r = _job(["start", "--port", board, "--wait"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TRANSFER>PLACE" in r.stdout and r.stdout.strip().endswith("cycle ended: placed")
    r = _job(["status", "--port", board])
    assert "cycles ok 1" in r.stdout


def test_abort_latches_and_clear_releases(tmp_path):
    # The plant's virtual time waits on the console while the job runs (tests/support/held_plant.py),
    # so the abort finds it running however fast the host: no part and 9 attempts would otherwise
    # end on their own in about a second of wall time on a fast machine (a CI run saw "nothing to
    # abort").
    with held_board(tmp_path / "flash", "part_missing", 2) as (board, ps):
        r = _job(["start", "--port", board, "--attempts", "9"])
        assert r.returncode == 0 and "job accepted" in r.stdout
        assert ps.busy.wait(60), "the job never left IDLE"
        r = _job(["abort", "--port", board])
        assert r.returncode == 0, r.stderr
        ps.let_go()
        r = _job(["status", "--port", board])
        assert "fault ABORTED" in r.stdout
        r = _job(["start", "--port", board])
        assert r.returncode == 1 and "refused" in r.stderr      # a latched fault blocks new jobs
        assert _job(["clear", "--port", board]).returncode == 0
        assert "fault none" in _job(["status", "--port", board]).stdout


@pytest.mark.parametrize("board", ["brownout_mid_lift"], indirect=True)
def test_rescue_after_a_reset_mid_lift(board):
    # The rail sags in LIFT (RAIL_LOW), the board resets and boots into INTERRUPTED with its arm
    # unpowered and the part held: nothing moves until the operator's rescue says where the arm is.
    r = _job(["start", "--port", board, "--wait"])
    assert r.returncode == 1 and "cycle ended: fault RAIL_LOW (in LIFT" in r.stdout, r.stdout + r.stderr
    status = ""
    deadline = time.time() + 60
    while "fault INTERRUPTED" not in status and time.time() < deadline:
        time.sleep(0.5)
        status = _job(["status", "--port", board]).stdout
    assert "fault INTERRUPTED" in status, status
    r = _job(["start", "--port", board])
    assert r.returncode == 1 and "refused" in r.stderr
    r = _job(["rescue", "--place", "--port", board])
    assert r.returncode == 1 and "--arm-near" in r.stderr and "cannot know where it stands" in r.stderr, r.stderr
    r = _job(["rescue", "--place", "--arm-near", "pick", "--wait", "--port", board])
    assert r.returncode == 0 and r.stdout.strip().endswith("rescue ended: placed"), r.stdout + r.stderr
    assert "fault none" in _job(["status", "--port", board]).stdout
    r = _job(["rescue", "--place", "--port", board])
    assert r.returncode == 1 and "no part is held" in r.stderr, r.stderr


def test_bad_pose_is_a_usage_error(board):
    r = _job(["start", "--port", board, "--pick", "1,2"])
    assert r.returncode == 2 and "X,Y,Z" in r.stderr


def test_an_infinite_or_nan_value_is_refused_before_the_board_is_asked(board):
    # float() takes "inf" and "nan": a pose or width so written is bad input named as such (exit 2,
    # one line), never a traceback, and the board is sent no job.
    for args in (["start", "--pick", "inf,0,0"], ["start", "--width", "inf"], ["start", "--width", "nan"],
                 ["rescue", "--rest", "--arm-at", "1,nan,2"]):
        r = _job(args + ["--port", board])
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and "finite" in r.stderr, (args, r.stderr)
    r = _job(["status", "--port", board])
    assert r.stdout.startswith("state IDLE, attempt 0, fault none, cycles ok 0 failed 0"), r.stdout


def test_a_board_stopped_at_the_repl_is_named_with_the_way_out(board):
    # Any mpremote command leaves the firmware stopped at the REPL, which echoes a request as text
    # and never replies: the verbs say so and how to restart it (host/board_state.py's "repl"),
    # rather than "is the firmware running?" after their whole wait; and they restart nothing.
    m = subprocess.run([SUREPICK_BIN, "link", "mpremote", "--port", board, "--", "exec", "x = 1"],
                       capture_output=True, text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    for args in (["start"], ["status"]):
        r = _job(args + ["--port", board])
        assert r.returncode == 1 and "Traceback" not in r.stderr, (args, r.stderr)
        assert "stopped at the REPL" in r.stderr and "Ctrl-D" in r.stderr, (args, r.stderr)
        assert "`surepick deploy --port %s`" % board in r.stderr, (args, r.stderr)
    r = subprocess.run([SUREPICK_BIN, "config", "get", "max_attempts", "--port", board],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "stopped at the REPL" in r.stderr, r.stderr
    # the verbs that first ask whether the arm is busy (STATUS) say the same, with doctor besides
    for args in (["config", "set", "max_attempts", "4"], ["calibrate", "current"]):
        r = subprocess.run([SUREPICK_BIN, *args, "--port", board], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr, (args, r.stderr)
        assert "stopped at the REPL" in r.stderr and "Ctrl-D" in r.stderr, (args, r.stderr)
        assert "`surepick doctor --port %s`" % board in r.stderr, (args, r.stderr)
    # still stopped: nothing restarted the firmware (or moved the arm)
    assert "stopped at the REPL" in _job(["status", "--port", board]).stderr
