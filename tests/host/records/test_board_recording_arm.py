# Issue 20, "your arm, not ours": a board recording (`surepick log export --run`) says which arm
# ran. The real `surepick monitor` reads the board's /arm.json at connect (ARM_READ) into its
# store; the export writes it as a simulated run does (arm + arm_description), and compare then
# takes it like any run's arm: the same arm simulated compares, the reference arm is refused.
# Oracles: the MeArm preset as `surepick arm show mearm` prints it, and the /arm.json the virtual
# board's flash holds. A database from before the monitor read the arm exports without one, and
# says so; compare keeps its note.
import json
import signal
import sqlite3
import subprocess
import time
import tomllib


from surepick.firmware import flashlog
from surepick.host.arms import files
from surepick.shared_fsm import codes, states
from tests.support.board_cli import running_board
from tests.support.cli import SUREPICK_BIN, surepick
from tests.support.needs import NEEDS_MICROPYTHON


def _pose(um):
    return "%.1f,%.1f,%.1f,%.1f" % (um[0] / 1000.0, um[1] / 1000.0, um[2] / 1000.0, um[3] / 1000.0)


def _stored_arms(db):
    # the monitor's arm readings, straight from its SQLite file ([] until it wrote one)
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            return con.execute("SELECT what, description FROM arms").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:          # no file or no table yet
        return []


def _placed(db):
    # the monitor stored the cycle's end: a transition back to IDLE for R_PLACED
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            return con.execute("SELECT 1 FROM records WHERE rtype=? AND to_state=? AND reason=?",
                               (flashlog.R_TRANSITION, states.IDLE, codes.R_PLACED)).fetchone() is not None
        finally:
            con.close()
    except sqlite3.OperationalError:
        return False


def _sim(out, *extra):
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "2", "--out", out, "--no-plots", *extra,
                 timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@NEEDS_MICROPYTHON
def test_a_mearm_boards_recording_carries_its_arm_and_compare_uses_it(tmp_path):
    from surepick.sim.world import World
    mearm, _ = files.load("mearm")
    pick, place, width = World("nominal", seed=2, arm=mearm).job_um()    # the MeArm bench's job
    flash, db = tmp_path / "flash", tmp_path / "m.db"
    with running_board(flash, "nominal", 2, extra=("--arm", "mearm", "--realtime")) as port:
        on_flash = json.loads((flash / "arm.json").read_text())
        # the monitor connects while the cycle may still run: the board answers ARM_READ at rest
        # only, so the monitor asks again until it is; the cycle must place the part all the same
        r = subprocess.run([SUREPICK_BIN, "job", "start", "--port", port, "--pick", _pose(pick),
                            "--place", _pose(place), "--width", "%.1f" % (width / 1000.0)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(tmp_path / "monitor.out", "w") as out:
            m = subprocess.Popen([SUREPICK_BIN, "monitor", "--plain", "--db", str(db), "--port", port],
                                 stdout=out, stderr=subprocess.STDOUT)
            try:
                deadline = time.time() + 120        # the arm is read after the log's back-fill
                while time.time() < deadline and not (_stored_arms(db) and _placed(db)) and m.poll() is None:
                    time.sleep(0.2)
            finally:
                m.send_signal(signal.SIGINT)
                m.wait(timeout=60)
        assert _stored_arms(db), (tmp_path / "monitor.out").read_text()
    r = surepick("log", "export", "--db", db, "--run", tmp_path / "rec")
    assert r.returncode == 0, r.stderr
    assert "its arm: read from the board by the monitor at " in r.stderr, r.stderr
    meta = json.loads((tmp_path / "rec" / "run.json").read_text())
    assert meta["arm"] == "mearm"
    assert meta["arm_description"] == on_flash                  # what the board's flash holds
    shown = tomllib.loads(surepick("arm", "show", "mearm").stdout)    # the preset file, defaults left out
    flat = files.flatten(meta["arm_description"])
    assert {k: flat.get(k) for k in files.flatten(shown)} == files.flatten(shown)
    assert meta["arm_source"].startswith("read from the board by the monitor at ")
    cycles = [json.loads(line) for line in (tmp_path / "rec" / "cycles.jsonl").read_text().splitlines()]
    assert [c["outcome"] for c in cycles] == ["placed"]
    assert "mearm (parallel)" in meta["arm_source"]

    _sim(tmp_path / "ref")
    r = surepick("compare", tmp_path / "rec", tmp_path / "ref", "--out", tmp_path / "cmp1", timeout=200)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the runs are of different arms: %s ran 'mearm', %s ran 'reference'" % (
        tmp_path / "rec", tmp_path / "ref") in r.stderr, r.stderr

    _sim(tmp_path / "sim_mearm", "--arm", "mearm")
    r = surepick("compare", tmp_path / "rec", tmp_path / "sim_mearm", "--out", tmp_path / "cmp2", timeout=200)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "different arms" not in r.stdout + r.stderr and "which arm ran" not in r.stdout
    report = json.loads((tmp_path / "cmp2" / "comparison.json").read_text())
    assert any(c["phase"] == "CYCLE" and c["metric"] == "outcomes" and not c["one_sided"] for c in report["checks"])


def test_a_database_from_before_the_monitor_read_the_arm_exports_without_one(tmp_path):
    from surepick.host.monitor.store import Store
    db = tmp_path / "old.db"
    s = Store(db)                  # the tables an older monitor made: none for arms
    path = (states.IDLE, states.APPROACH, states.DESCEND, states.GRASP, states.VERIFY, states.LIFT,
            states.TRANSFER, states.PLACE, states.IDLE)
    recs = [(i + 1, flashlog.R_TRANSITION,
             (i + 1, 1000 * (i + 1), codes.K_TRANSITION, a, b, codes.R_PLACED if b == states.IDLE else 0,
              1, 0, 0, 0, 0, 0)) for i, (a, b) in enumerate(zip(path, path[1:]))]
    s.touch_board("old-board")
    s.add_records("old-board", 0, recs)
    s.close()
    con = sqlite3.connect(db)
    assert con.execute("SELECT name FROM sqlite_master WHERE name='arms'").fetchone() is None
    con.close()
    r = surepick("log", "export", "--db", db, "--run", tmp_path / "rec")
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "rec" / "run.json").read_text())
    assert "arm" not in meta and "arm_description" not in meta
    assert meta["arm_source"].startswith("not stored: recorded before the monitor read")
    _sim(tmp_path / "ref")
    r = surepick("compare", tmp_path / "rec", tmp_path / "ref", "--out", tmp_path / "cmp", timeout=200)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "is a board recording whose arm is not stored: recorded before the monitor read" in r.stdout, r.stdout
    assert "different arms" not in r.stdout + r.stderr


@NEEDS_MICROPYTHON
def test_a_board_with_an_invalid_arm_json_is_recorded_as_not_known_and_the_monitor_goes_on(tmp_path):
    # The firmware refuses jobs with an /arm.json it cannot use; the monitor stores that the arm
    # is not known (what is true), keeps following the board, and the export says why.
    from tests.support.monitor import Monitor, wait_until
    from tests.support.vboard import deploy_firmware
    flash, db = tmp_path / "flash", tmp_path / "m.db"
    deploy_firmware(flash)
    (flash / "arm.json").write_text('{"format": 1, "name": "broken", "kind": "no_such_kind"}')
    with running_board(flash, "nominal", 2, deploy=False) as port:
        mon = Monitor(port, str(db))
        try:
            wait_until(lambda: _stored_arms(db), 60, "the monitor to store the board's arm")
            assert _stored_arms(db) == [("invalid", None)]
            assert mon.thread.is_alive() and mon.status.connected, mon.story()
        finally:
            mon.close()
    r = surepick("log", "export", "--db", db, "--run", tmp_path / "rec")
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "rec" / "run.json").read_text())
    assert "arm" not in meta and "arm_description" not in meta
    assert meta["arm_source"].startswith("not known: the board's /arm.json is not a valid description"), meta
    assert "kind" in meta["arm_source"]
