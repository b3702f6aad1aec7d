# A production run on the virtual board (the real firmware under MicroPython, the MuJoCo plant):
# `surepick job run` sends it, the board runs cycle after cycle by itself and stops on its own
# policy; `job status` and `job report` say what happened. The expected numbers come from the
# scenario (how many parts the plant holds and where), never from the run's own records.
import json
import subprocess

import pytest

from tests.support.board_cli import running_board
from tests.support.cli import SUREPICK_BIN


@pytest.fixture
def board(tmp_path, request):
    with running_board(tmp_path / "flash", getattr(request, "param", "nominal"), 2) as port:
        yield port


def sp(*args, timeout=600):
    return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def job_file(tmp_path, **extra):
    # the reference cell's job (the pad, the bin), one attempt a part so an empty slot is quick
    d = {"format": "surepick-job", "version": 1,
         "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5, "pitch_deg": -90.0},
         "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5, "pitch_deg": -90.0},
         "part_width_mm": 25.0, "max_attempts": 1}
    d.update(extra)
    p = tmp_path / "job.json"
    p.write_text(json.dumps(d))
    return p


def test_one_part_then_an_empty_pad_is_skipped_and_the_count_ends_it(board, tmp_path):
    # nominal: one part on the pad. Cycle 1 places it; cycle 2 finds the pad empty (GRASP_FAILED
    # with one attempt), skips the slot and the count of 2 ends the run normally.
    r = sp("job", "run", "--count", 2, "--job", job_file(tmp_path), "--wait", "--port", board)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "run cycle 1 slot 0: placed" in out and "run cycle 2 slot 0: GRASP_FAILED" in out, out
    assert "run stopped: count_done after 2 cycles, 1 placed" in out, out
    rep = sp("job", "report", "--port", board).stdout
    assert "2 cycles, 1 placed" in rep and "faults: GRASP_FAILED 1" in rep, rep
    assert "longest run without a fault: 1 cycles" in rep and "slots skipped: 0" in rep, rep
    st = sp("job", "status", "--port", board).stdout
    assert "run: ended, cycle 2 of 2, placed 1, faulted 1, skipped 1" in st and "fault none" in st, st


def test_stop_policy_ends_the_run_at_the_first_failed_part(board, tmp_path):
    assert sp("config", "set", "run_on_fail", 1, "--port", board).returncode == 0
    r = sp("job", "run", "--count", 3, "--job", job_file(tmp_path), "--wait", "--port", board)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "run stopped: failed_part after 2 cycles, 1 placed, fault GRASP_FAILED" in r.stdout, r.stdout
    st = sp("job", "status", "--port", board).stdout
    assert "fault GRASP_FAILED" in st and "run_stopped:" in st and "job report" in st, st


@pytest.mark.parametrize("board", ["part_missing"], indirect=True)
def test_faults_in_a_row_stop_the_run(board, tmp_path):
    assert sp("config", "set", "run_stop_in_row", 2, "--port", board).returncode == 0
    r = sp("job", "run", "--until-stopped", "--job", job_file(tmp_path), "--wait", "--port", board)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "run stopped: in_row after 2 cycles, 0 placed, fault GRASP_FAILED" in r.stdout, r.stdout
    rep = sp("job", "report", "--port", board).stdout
    assert "faults: GRASP_FAILED 2" in rep and "stopped: in_row" in rep, rep
    st = sp("job", "status", "--port", board).stdout
    assert "stopped: run_stop_in_row faulted cycles in a row" in st and "run_stopped:" in st and "job report" in st, st


@pytest.mark.parametrize("board", ["part_missing"], indirect=True)
def test_a_part_never_ready_ends_the_run_loudly(board, tmp_path):
    # part-ready by a grasp at the pad: nothing ever arrives; the run tries every 500 ms until
    # run_ready_timeout_ms and then stops, the arm at rest with nothing held and no fault latched
    assert sp("config", "set", "run_ready_timeout_ms", 3000, "--port", board).returncode == 0
    jf = job_file(tmp_path, part_ready={"mode": "check", "wait_ms": 500})
    r = sp("job", "run", "--count", 5, "--job", jf, "--wait", "--port", board)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no part yet" in r.stdout and "run stopped: ready_timeout after 0 cycles" in r.stdout, r.stdout
    st = sp("job", "status", "--port", board).stdout
    assert "run_stopped:" in st and "the part was not ready" in st, st


@pytest.mark.parametrize("board", ["estop"], indirect=True)
def test_an_estop_stops_the_run(board, tmp_path):
    # the estop scenario presses the e-stop in the first cycle's LIFT
    r = sp("job", "run", "--count", 3, "--job", job_file(tmp_path), "--wait", "--port", board)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "run stopped: fault after 1 cycles, 0 placed, fault ESTOP" in r.stdout, r.stdout
    st = sp("job", "status", "--port", board).stdout
    assert "fault ESTOP" in st, st


def test_stop_ends_the_run_after_the_cycle_and_a_job_file_slot_out_of_reach_is_refused(board, tmp_path):
    bad = job_file(tmp_path, pick_pattern={"kind": "tray", "pitch_x_mm": 200.0, "pitch_y_mm": 0.0, "nx": 2, "ny": 1})
    r = sp("job", "run", "--count", 2, "--job", bad, "--port", board)
    assert r.returncode == 2 and "pick slot 1" in r.stderr, r.stderr
    # neither policy ends this run before the stop does: only the request ends it
    assert sp("config", "set", "run_stop_in_row", 1000, "--port", board).returncode == 0
    assert sp("config", "set", "run_rate_pct", 100, "--port", board).returncode == 0
    r = sp("job", "run", "--until-stopped", "--job", job_file(tmp_path), "--port", board)
    assert r.returncode == 0 and "run accepted" in r.stdout, r.stdout + r.stderr
    r = sp("job", "start", "--port", board)
    assert r.returncode == 1 and "refused" in r.stderr, r.stderr      # the run picks its own parts
    assert sp("job", "stop", "--port", board).returncode == 0
    import time
    deadline = time.time() + 300
    st = ""
    while time.time() < deadline and "run: ended" not in st:
        time.sleep(1)
        st = sp("job", "status", "--port", board).stdout
    # one part on the pad: placed once, whichever cycle the stop came in; nothing held, no fault
    assert "run: ended, cycle" in st and "(until stopped), placed 1," in st and "stopped on request" in st, st
    assert "fault none" in st and "holding" not in st, st
    rep = sp("job", "report", "--port", board).stdout
    assert "stopped: requested" in rep, rep
    assert sp("job", "stop", "--port", board).returncode == 1


@pytest.mark.parametrize("board", ["part_missing"], indirect=True)
def test_a_failure_rate_over_the_window_stops_the_run(board, tmp_path):
    # no part ever: with faults in a row out of the way, the rate stops it once the window of 4
    # cycles is full (4 of 4 faulted, more than 50 %), not before
    for key, value in (("run_stop_in_row", 1000), ("run_rate_window", 4), ("run_rate_pct", 50)):
        assert sp("config", "set", key, value, "--port", board).returncode == 0
    r = sp("job", "run", "--until-stopped", "--job", job_file(tmp_path), "--wait", "--port", board)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "run stopped: rate after 4 cycles, 0 placed, fault GRASP_FAILED" in r.stdout, r.stdout
    assert "slots skipped: 0, 0, 0, 0" in r.stdout, r.stdout
    st = sp("job", "status", "--port", board).stdout
    assert "stopped: more than run_rate_pct" in st and "run_stopped:" in st and "job report" in st, st


@pytest.mark.parametrize("board", ["brownout_mid_lift"], indirect=True)
def test_a_brownout_mid_run_latches_interrupted_and_the_run_does_not_resume(board, tmp_path):
    # the rail browns out in the first cycle's LIFT: the controller resets and boots into
    # INTERRUPTED (the cycle's marker was on flash); the run lived in RAM and is over
    import time
    r = sp("job", "run", "--count", 3, "--job", job_file(tmp_path), "--port", board)
    assert r.returncode == 0 and "run accepted" in r.stdout, r.stdout + r.stderr
    deadline = time.monotonic() + 300
    st = ""
    while time.monotonic() < deadline and "fault INTERRUPTED" not in st:
        time.sleep(1)
        st = sp("job", "status", "--port", board).stdout
    assert "fault INTERRUPTED" in st, st
    # no run since this boot: nothing resumed it, and nothing moves (asked twice, a while apart)
    assert "run:" not in st, st
    time.sleep(3)
    again = sp("job", "status", "--port", board).stdout
    assert "fault INTERRUPTED" in again and "run:" not in again, again
    # what to do next: the way out the board's state names
    assert "surepick job" in again, again
    rep = sp("job", "report", "--port", board).stdout
    assert "stopped: the board restarted mid-run" in rep and "does not resume" in rep, rep
    assert "0 placed" in rep, rep


@pytest.mark.parametrize("board", ["part_missing"], indirect=True)
def test_a_runs_approach_height_goes_with_the_run_and_a_refused_run_or_job_changes_nothing(board, tmp_path):
    # The job file's approach height travels in the RUN frame as in JOB's (docs/protocol.md): the
    # board takes it only with a run it takes. While the run goes on, another RUN and a JOB, each
    # with another height, are refused (the run picks its own parts) and leave the setting alone.
    import time

    def height():
        r = sp("config", "get", "approach_height_um", "--port", board)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split("=")[1].split()[0])      # "approach_height_um = 60000 µm"

    assert height() == 60000        # the setting's default (config.py: 60 mm)
    for key, value in (("run_stop_in_row", 1000), ("run_rate_pct", 100)):
        assert sp("config", "set", key, value, "--port", board).returncode == 0
    r = sp("job", "run", "--until-stopped", "--job", job_file(tmp_path, approach_height_mm=45.0), "--port", board)
    assert r.returncode == 0 and "run accepted" in r.stdout, r.stdout + r.stderr
    assert "approach_height_um: 45000" in r.stdout, r.stdout
    assert height() == 45000
    other = tmp_path / "other"
    other.mkdir()
    r = sp("job", "run", "--count", 1, "--job", job_file(other, approach_height_mm=50.0), "--port", board)
    assert r.returncode == 1 and "refused" in r.stderr, r.stdout + r.stderr
    r = sp("job", "start", "--job", job_file(other, approach_height_mm=50.0), "--port", board)
    assert r.returncode == 1 and "a production run is going on" in r.stderr and "job stop" in r.stderr, r.stderr
    assert height() == 45000
    assert sp("job", "stop", "--port", board).returncode == 0
    deadline = time.monotonic() + 300
    st = ""
    while time.monotonic() < deadline and "run: ended" not in st:
        time.sleep(1)
        st = sp("job", "status", "--port", board).stdout
    assert "stopped on request" in st, st
    assert height() == 45000
