# Item 4 of the bench-day issue: what a person reads names things. `surepick config` against the
# firmware on the virtual board: ranges and units in errors, list/diff/export/import, an import
# checked as a whole before anything is written; a refused job names the latched fault, where it
# latched and the command that clears it. Expected ranges, defaults and units are the reference
# build's (../shared/HARDWARE.md, docs/conventions.md), written out here.
import json
import re
import time

import pytest

from surepick.firmware.settings import BOARD_FIELDS
from surepick.shared_fsm.config import FIELDS as MACHINE_FIELDS
from tests.support.board_cli import running_board
from tests.support.cli import surepick
from tests.support.held_plant import held_board
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.period import PERIOD_MS

pytestmark = NEEDS_MICROPYTHON

# Which settings exist is the firmware's own tables (the board's and the machine's), not a count
# written here: a setting added to either must show up in list and export.
BOARD_KEYS = {f[0] for f in BOARD_FIELDS}
MACHINE_KEYS = {f[0] for f in MACHINE_FIELDS}


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    with running_board(tmp_path_factory.mktemp("answers") / "flash", "part_missing", 2) as p:
        yield p


def test_an_out_of_range_value_names_range_and_unit_before_any_board_is_asked():
    r = surepick("config", "set", "grasp_dwell_ms", "9000", "--port", "socket://127.0.0.1:1")
    assert r.returncode == 2
    assert r.stderr.strip() == "surepick config: grasp_dwell_ms must be 0..5000 ms, got 9000"
    r = surepick("config", "set", "grasp_dwel_ms", "300", "--port", "socket://127.0.0.1:1")
    assert r.returncode == 2 and "did you mean grasp_dwell_ms" in r.stderr


def _diff(port):
    r = surepick("config", "diff", "--port", port)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_list_shows_every_setting_with_default_range_unit_and_reboot(port):
    r = surepick("config", "list", "--port", port)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:-1]}
    assert not BOARD_KEYS & MACHINE_KEYS        # one name, one setting
    assert set(rows) == BOARD_KEYS | MACHINE_KEYS
    assert re.match(r"grasp_dwell_ms\s+350\s+350\s+0\.\.5000\s+ms$", rows["grasp_dwell_ms"]), rows["grasp_dwell_ms"]
    assert re.match(r"pin_estop\s+13\s+13\s+0\.\.29\s+yes\s+GPIO$", rows["pin_estop"]), rows["pin_estop"]
    assert "pin_servo0" not in rows and "servo0_trim_us" not in rows     # the arm description's now
    assert re.match(r"loop_period_ms\s+%d\s+%d\s+1\.\.50\s+yes\s+ms$" % (PERIOD_MS, PERIOD_MS), rows["loop_period_ms"])
    assert "current_holding_ma" in rows and rows["current_holding_ma"].rstrip().endswith("mA")


def test_set_diff_export_import_round_trip(port, tmp_path):
    assert _diff(port).startswith("every setting is at its default")
    r = surepick("config", "set", "grasp_dwell_ms", "420", "--port", port)
    assert r.returncode == 0 and r.stdout.strip() == "grasp_dwell_ms = 420 ms (saved)", r.stdout + r.stderr
    assert _diff(port).strip() == "grasp_dwell_ms = 420 (default 350 ms)"
    saved = tmp_path / "cfg.json"
    r = surepick("config", "export", saved, "--port", port)
    assert r.returncode == 0, r.stderr
    exported = json.loads(saved.read_text())
    assert exported["machine"]["grasp_dwell_ms"] == 420 and exported["board"]["telemetry_hz"] == 10
    assert set(exported["machine"]) == MACHINE_KEYS and set(exported["board"]) == BOARD_KEYS
    assert surepick("config", "set", "grasp_dwell_ms", "350", "--port", port).returncode == 0
    r = surepick("config", "import", saved, "--port", port)
    assert r.returncode == 0 and "grasp_dwell_ms: 350 -> 420" in r.stdout, r.stdout + r.stderr
    assert _diff(port).strip() == "grasp_dwell_ms = 420 (default 350 ms)"
    assert surepick("config", "set", "grasp_dwell_ms", "350", "--port", port).returncode == 0


@pytest.mark.parametrize("content,needle", [
    ({"grasp_dwell_ms": 400, "pin_estop": 99}, "pin_estop must be 0..29 GPIO, got 99"),
    ({"grasp_dwell_ms": 400, "current_holding_ma": 700}, "current_stall_ma"),
    ({"grasp_dwell_ms": 400, "pin_estop": 14, "pin_switch": 13}, "one at a time"),
    ({"grasp_dwell_ms": 400, "no_such_setting": 1}, "no setting 'no_such_setting'"),
    ({"grasp_dwell_ms": 400.5}, "grasp_dwell_ms must be a whole number 0..5000 ms"),
    ({"grasp_dwell_ms": 400, "servo1_trim_us": 10}, "the arm description's servos.shoulder.trim_us"),
], ids=["range", "relation", "pin-swap", "unknown", "not-integer", "moved-to-the-arm"])
def test_a_bad_import_file_changes_nothing_and_names_the_key(port, tmp_path, content, needle):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(content))
    before = _diff(port)
    r = surepick("config", "import", f, "--port", port)
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert _diff(port) == before                 # grasp_dwell_ms (valid on its own) was not written


@pytest.fixture
def held_port(tmp_path_factory):
    # A board in this process whose virtual time waits on the console while a job runs
    # (tests/support/held_plant.py): the abort finds the job running, however fast the host.
    with held_board(tmp_path_factory.mktemp("held") / "flash", "part_missing", 2) as held:
        yield held


def test_a_refused_job_names_the_latched_fault_and_how_to_clear_it(held_port):
    port, ps = held_port
    r = surepick("job", "start", "--attempts", "9", "--port", port, timeout=180)
    assert r.returncode == 0, r.stderr
    assert ps.busy.wait(60), "the job never left IDLE"
    r = surepick("job", "abort", "--port", port)
    assert r.returncode == 0, r.stderr
    # The aborted arm brakes to a stop; until it is at rest a job is refused for that (how far it
    # got by now depends on the host's speed): ask again until the arm is still, then the
    # latched fault is what keeps the job refused.
    deadline = time.monotonic() + 60
    while True:
        r = surepick("job", "start", "--port", port)
        if "the arm is still moving" not in r.stderr:
            break
        assert r.returncode == 1 and time.monotonic() < deadline, r.stderr
    assert r.returncode == 1
    msg = r.stderr.strip()
    assert msg.startswith("surepick job start: refused: the board has a latched fault: ABORTED (in "), msg
    assert re.search(r"ABORTED \(in (APPROACH|DESCEND|GRASP|VERIFY|RECOVER), attempt \d\): the job was aborted", msg)
    assert msg.endswith("clear it with `surepick job clear --port %s`" % port), msg
    words = msg.replace(port, "PORT")          # the port's digits may hold any number
    assert "FAULTED" not in words and not re.search(r"\b41\b", words), msg   # no code name, no code number
    r = surepick("job", "abort", "--port", port)
    assert r.returncode == 1 and "nothing to abort" in r.stderr and "STATE" not in r.stderr
    assert surepick("job", "clear", "--port", port).returncode == 0
    r = surepick("job", "clear", "--port", port)
    assert r.returncode == 1 and "there is no latched fault to clear" in r.stderr
    r = surepick("job", "start", "--width", "60", "--port", port)
    assert r.returncode == 1 and "wider than the jaw opens" in r.stderr and "bad_job" not in r.stderr


def test_a_suggested_command_carries_the_port_only_when_one_was_given():
    from surepick.host.link.answers import refusal
    from surepick.shared_fsm import link as lk
    assert refusal(lk.E_BUSY, (), "/dev/ttyACM0").endswith("`surepick job abort --port /dev/ttyACM0`")
    # found by auto, $SUREPICK_PORT or the config file: the bare command finds it the same way
    assert refusal(lk.E_BUSY, (), None).endswith("`surepick job abort`")
    assert "None" not in refusal(lk.E_FAULTED, (40, 3, 1), None)


@pytest.mark.parametrize("code,reason,way_out", [
    ("E_STATE", "jaw_not_empty", "`surepick calibrate pot --port /dev/ttyACM0`"),
    ("E_STATE", "fault", "`surepick job clear --port /dev/ttyACM0`"),
    ("E_STATE", "timeout", "check the jaw moves freely"),
    ("E_BAD_VALUE", "unreachable", "`surepick arm check ARM.toml`")])
def test_a_calibration_or_job_refusal_says_what_to_do(code, reason, way_out):
    # Each refusal names what to do about it (a command to run, with the port the person gave,
    # or a thing to check), never only what went wrong.
    from surepick.host.link.answers import refusal
    from surepick.shared_fsm import link as lk
    text = refusal(getattr(lk, code), (reason,), "/dev/ttyACM0")
    assert way_out in text, text
    assert "{port}" not in text, text
