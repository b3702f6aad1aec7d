# One name per fault and state everywhere (issue 24, item 7), through the CLI: the same fault
# reads the same in `job start --wait`, in a refusal and in the monitor; `monitor --plain` and
# trajectory.csv carry names, not codes; a value is printed with its unit apart from it. The names
# expected here are the protocol's and the conventions' (docs/protocol.md, docs/conventions.md),
# written out, not taken from the code under test. (One fault counted once per event: W6 in
# tests/mpy/fw_watches.py, on the firmware itself.)
import csv
import re

from tests.support.bench import PlantBench
from tests.support.cli import surepick
from tests.support.needs import NEEDS_MICROPYTHON

STATES = {"IDLE", "APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER", "PLACE", "RECOVER"}


@NEEDS_MICROPYTHON
def test_a_fault_a_boot_and_a_setting_read_the_same_everywhere(tmp_path):
    with PlantBench(tmp_path, "part_missing", 1) as b:
        b.wait_firmware()
        r = b.run("job", "start", "--port", b.port, "--wait")
        ended = re.search(r"cycle ended: fault GRASP_FAILED \(in (\w+), attempt 3\)", r.stdout)
        assert ended, r.stdout + r.stderr
        r = b.run("calibrate", "pot", "--port", b.port)       # refused: the fault is latched
        refused = re.search(r"GRASP_FAILED \(in (\w+), attempt 3\)", r.stderr)
        assert r.returncode == 1 and refused, r.stderr
        assert ended.group(1) == refused.group(1) == "VERIFY"   # the grasp's verdict: VERIFY found nothing
        mon = b.run("monitor", "--port", b.port, "--plain", "--seconds", "3", "--db", tmp_path / "m.db").stdout
        boot = re.search(r"type=boot .*reset_cause=(\S+) boot_count=1 action=(\S+)", mon)
        assert boot and boot.groups() == ("POWER_ON", "normal"), mon        # a fresh board's first boot
        present = re.findall(r" present=(\S+)", mon)
        assert present and all(re.fullmatch(r"none|(jaw|switch|current|beam)(\+(jaw|switch|current|beam))*", p)
                               for p in present), present
        fault = re.search(r"type=fault .* fault RECOVER->IDLE reason=GRASP_FAILED", mon)
        assert fault, mon
        assert b.run("job", "clear", "--port", b.port).returncode == 0
        r = b.run("config", "set", "servo1_speed_dps", "200", "--port", b.port)
        assert r.returncode == 0 and r.stdout.startswith("servo1_speed_dps = 200 deg/s (saved"), r.stdout + r.stderr
        r = b.run("config", "get", "grasp_dwell_ms", "--port", b.port)
        assert r.stdout.strip() == "grasp_dwell_ms = 350 ms", r.stdout


def test_trajectory_csv_names_states_and_faults(tmp_path):
    out = tmp_path / "run"
    r = surepick("sim", "run", "--scenario", "part_missing", "--seed", "1", "--out", out, "--no-plots", timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr                      # no part: GRASP_FAILED
    with open(out / "trajectory.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["state"] for row in rows} <= STATES and "RECOVER" in {row["state"] for row in rows}
    assert {row["fault"] for row in rows} == {"none", "GRASP_FAILED"}
