# `surepick bringup --operator sim` on stand-in benches (`surepick board --standin SEED`): the
# firmware on the virtual board, the MuJoCo arm with hidden servo calibrations, the stand-in
# person looking at where the arm physically is. What bring-up finds is compared with the bench's
# hidden truth from `board --print-truth` (the independent oracle), then the board gets it, runs a
# dry cycle (no part: every sensor must say so) and a first real cycle, which must place the part
# as the physics judge measures it.
import json
import os
import re
import signal
import subprocess
import time

import pytest

from tests.support.board_cli import running_board
from tests.support.cli import SUREPICK_BIN, surepick

ZERO_TOLERANCE_DEG = 2.0       # the "Done when"
RANGE_TOLERANCE = 0.03
# The pot must read the jaw well inside the firmware's jaw check (jaw_present_min_um, 1.5 mm):
# within POT_MM over the jaw's whole travel (0..45 mm: the reading at 0 mm and the slope).
POT_MM = 0.25
JAW_TRAVEL_MM = 45.0
# The gripper's stall current, read through the board's shunt (12-bit ADC, 60 counts of noise:
# 3 mA) and its rail divider, against the stand-in's hidden stall_ma_5v: within this fraction.
STALL_TOLERANCE = 0.03
# The current sense's zero bring-up has the board take (calibrate current, the jaw open and still)
# against the bench's hidden zero-current reading plus the idle gripper's draw: within this many
# mA (the average of 32 reads with 3 mA of noise is within 0.5 mA; the open jaw's own spring and
# friction draw about 1 mA more than idle).
ZERO_TOLERANCE_MA = 3.0


def _truth(seed, arm=()):
    # The bench's hidden calibration, {"servos", "pot"}: asked once a test (a process of its own).
    r = surepick("board", "--standin", seed, *arm, "--print-truth")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _control(port, command):
    from surepick.host.vboard.control import find_board, request
    return request(find_board(port)["control"], command)


def _check_found(out, seed, bench):
    found = json.loads((out / "found.json").read_text())["servos"]
    truth = bench["servos"]
    assert sorted(found) == sorted(truth)
    for name, t in truth.items():
        f = found[name]
        print("seed %d %-8s zero %+.2f deg  range %+.2f%%" % (seed, name, f["zero_deg"] - t["zero_deg"],
                                                             100.0 * (f["range_deg"] / t["range_deg"] - 1.0)))
        assert f["direction"] == t["direction"], (name, f, t)
        assert abs(f["zero_deg"] - t["zero_deg"]) <= ZERO_TOLERANCE_DEG, (name, f, t)
        assert abs(f["range_deg"] / t["range_deg"] - 1.0) <= RANGE_TOLERANCE, (name, f, t)
    pot, t = json.loads((out / "found.json").read_text())["pot"], bench["pot"]
    print("seed %d pot      closed %+.0f counts (%+.3f mm)  per mm %+.2f%%" % (
        seed, pot["closed_counts"] - t["closed_counts"], (pot["closed_counts"] - t["closed_counts"]) / t["counts_per_mm"],
        100.0 * (pot["counts_per_mm"] / t["counts_per_mm"] - 1.0)))
    assert abs(pot["closed_counts"] - t["closed_counts"]) <= POT_MM * t["counts_per_mm"], (pot, t)
    assert abs(pot["counts_per_mm"] / t["counts_per_mm"] - 1.0) <= POT_MM / JAW_TRAVEL_MM, (pot, t)


def _check_current(out, seed, bench):
    # gripper.current: the stall current found against the bench's hidden one (the oracle), and
    # the two settings worked by hand from the readings the step saved (squeeze.py's rule: the
    # grip threshold half-way between closed on nothing and the squeeze scaled to rail_low_mv
    # 4200; the stall watch 10% under the stall scaled to 4200 mV).
    from surepick.host.arms import files
    from surepick.host.bringup.squeeze import idle_ma
    idle = idle_ma(files.load("reference")[0])
    c = json.loads((out / "found.json").read_text())["gripper"]["current"]
    stall, t = c["stall_ma_5v"], bench["servos"]["gripper"]["stall_ma_5v"]
    print("seed %d gripper  stall %.0f mA at 5 V (truth %.0f: %+.2f%%); empty %d mA, squeezing %d mA at %d mV, "
          "stall %d mA at %d mV; current_grip_min_ma %d, current_stall_ma %d, current_crush_ma %d, "
          "current_hold_limit_ma %d"
          % (seed, stall, t, 100.0 * (stall / t - 1.0), c["empty"][0], c["squeezing"][0], c["squeezing"][1],
             c["stall"][0], c["stall"][1], c["current_grip_min_ma"], c["current_stall_ma"],
             c["current_crush_ma"], c["current_hold_limit_ma"]))
    assert abs(stall / t - 1.0) <= STALL_TOLERANCE, (stall, t)
    rail_low = 4200.0
    squeeze_low = c["squeezing"][0] * rail_low / c["squeezing"][1]
    assert abs(c["current_grip_min_ma"] - (c["empty"][0] + squeeze_low) / 2.0) <= 1.0, c
    # the stall watch is the figure's whole mA below (int), above the idle gripper as the board
    # reads; stall_ma_5v is saved to 0.1 mA, which is up to 0.04 mA of the figure either way
    assert -0.04 <= (stall * rail_low / 5000.0 - idle) * 0.9 - c["current_stall_ma"] < 1.04, c
    # the stall watch sits under the hidden stall current at 4.2 V, and above the squeeze
    assert c["squeezing"][0] < c["current_stall_ma"] < t * rail_low / 5000.0, c
    # the crush line half-way, the holding limit a quarter of the way, from the squeeze as read to
    # the stall watch; both under the hidden stall at 4.2 V with the winding 25 K warm (9% less)
    gap = c["current_stall_ma"] - c["squeezing"][0]
    assert abs(c["current_crush_ma"] - (c["squeezing"][0] + gap / 2.0)) <= 1.0, c
    assert abs(c["current_hold_limit_ma"] - (c["squeezing"][0] + gap / 4.0)) <= 1.0, c
    assert c["squeezing"][0] < c["current_hold_limit_ma"] < c["current_crush_ma"] < t * rail_low / 5000.0 * 0.91, c
    return c


def _check_zero(port, seed, bench):
    # The board's current_offset_counts after bring-up, and found.json's, against the bench's
    # hidden reading at 0 mA (--print-truth) plus the idle gripper it zeroed on (its servo model's
    # idle_ma in the description) at the sense's counts per A.
    from surepick.host.arms import files
    from surepick.host.bringup.squeeze import idle_ma
    arm = files.load("reference")[0]
    per_ma = arm.sensors["current"]["counts_per_a"] / 1000.0
    board = int(_config(port, "current_offset_counts").split("=")[1].split()[0])
    want = bench["current"]["offset_counts"] + idle_ma(arm) * per_ma
    print("seed %d current zero %d counts, the bench's %.0f + idle: %+.2f mA"
          % (seed, board, bench["current"]["offset_counts"], (board - want) / per_ma))
    assert abs(board - want) <= ZERO_TOLERANCE_MA * per_ma, (board, want)
    return board


def _check_a_job_places(port):
    # With the four current settings bring-up wrote, a plain `job start --wait` on a fresh part
    # places it (no false CRUSH in VERIFY, no HOLD_OVERCURRENT while it is held), as the physics
    # judge of that world says.
    assert _control(port, "reset-world")["ok"]
    r = surepick("job", "start", "--port", port, "--wait")
    assert r.returncode == 0 and "CRUSH" not in r.stdout and "HOLD_OVERCURRENT" not in r.stdout, r.stdout + r.stderr
    assert _control(port, "status")["verdict"][0] == "placed"


def _check_cycles(port, out, stdout):
    # Bring-up's own dry cycle ended "nothing held" and was cleared; its first cycle placed the
    # part, as the physics judge of that world (the part put back: a fresh one) says.
    steps = json.loads((out / "bringup-state.json").read_text())["steps"]
    dry = steps["cycle.dry"]["closed_on_nothing"]
    assert dry["checks"] == [] and not dry["switch"] and not dry["beam"], dry
    first = steps["cycle.first"]["squeezing"]
    assert {"jaw", "switch"} <= set(first["checks"]), first
    # found.json gets what the cycles measured: closed on nothing, and squeezing the part
    gripper = json.loads((out / "found.json").read_text())["gripper"]
    assert {k: gripper[k] for k in ("closed_on_nothing", "squeezing")} == {"closed_on_nothing": dry,
                                                                           "squeezing": first}, gripper
    assert first["current_ma"] > dry["current_ma"] and first["jaw_mm"] > dry["jaw_mm"]
    assert "bring-up done" in stdout, stdout
    verdict = _control(port, "status")["verdict"]
    assert verdict[0] == "placed", verdict
    r = surepick("job", "status", "--port", port)
    assert "fault none" in r.stdout and "gripper_off" not in r.stdout, r.stdout


def _bringup(port, out, *more, timeout=900):
    return surepick("bringup", "--port", port, "--operator", "sim", "--out", out, *more, timeout=timeout)


def _check_mirrored(stdout, bench):
    # Every arm servo that turns against its joint (the truth says so) was either mirrored on the
    # board mid-session, through its /arm.json, or named as left so until --apply; no other one.
    against = {n for n, t in bench["servos"].items() if t["direction"] < 0 and n != "gripper"}
    mirrored = set(re.findall(r"mirroring it on the board \(servos\.(\w+)\.direction = -1 in its /arm\.json", stdout))
    left = set(re.findall(r"the (\w+) servo turns against its joint; left so on the board", stdout))
    assert mirrored | left == against and not mirrored & left, (mirrored, left, against)
    return mirrored


def _board_arm(flash):
    # The description the board runs: its flash's /arm.json, as the firmware reads it at boot.
    return json.loads((flash / "arm.json").read_text())


def _check_no_servo_settings(flash):
    # The servos' calibration lives in /arm.json alone: bring-up wrote none of the removed settings.
    from surepick.firmware import settings as fw_settings
    cfg = flash / "config.json"
    board = json.loads(cfg.read_text()).get("board", {}) if cfg.exists() else {}
    assert not set(board) & set(fw_settings.MOVED_TO_ARM), board


def _run_seed(tmp_path, seed, settings=(), job_after=False):
    flash = tmp_path / "flash"
    bench = _truth(seed)
    with running_board(flash, "nominal", 0, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        before = ""
        if settings:             # the board's settings changed for the steps on the board only
            r = _bringup(port, out)
            assert r.returncode == 0, r.stdout + r.stderr
            before = r.stdout
            for key, value in settings:
                assert surepick("config", "set", key, value, "--port", port).returncode == 0, key
        r = _bringup(port, out, "--apply")
        assert r.returncode == 0, r.stdout + r.stderr
        _check_found(out, seed, bench)
        _check_mirrored(before + r.stdout, bench)
        # --apply shipped the description written, as deploy --arm ships it
        from surepick.host.arms import files
        from surepick.host.cli.arm import load_arm
        assert _board_arm(flash) == json.loads(files.compact_json(load_arm(str(out / "arm.toml"))[0]))
        _check_no_servo_settings(flash)
        _check_cycles(port, out, r.stdout)
        _check_current(out, seed, bench)
        # the board took the gripper's currents, and its first cycle's current check counted the part
        gripper = json.loads((out / "found.json").read_text())["gripper"]
        assert gripper["current"]["zero_counts"] == _check_zero(port, seed, bench)
        for key in ("current_grip_min_ma", "current_stall_ma", "current_crush_ma", "current_hold_limit_ma"):
            assert _config(port, key).split("=")[1].split()[0] == str(gripper["current"][key]), key
        assert "current" in gripper["squeezing"]["checks"], gripper
        # its first cycle squeezed the part under the crush line
        assert gripper["squeezing"]["current_ma"] < gripper["current"]["current_crush_ma"], gripper
        if job_after:
            _check_a_job_places(port)
        return r


@pytest.mark.parametrize("seed", [1, 2])
def test_bringup_finds_the_hidden_calibration_and_the_arm_then_places(tmp_path, seed):
    _run_seed(tmp_path, seed, job_after=True)


def test_the_stall_watch_acting_while_bringup_presses_the_jaw(tmp_path):
    # The board's stall watch at 300 ms (current_stall_ms, set once the servos are found: it
    # times the arm's rail-sag watch too): gripper.current presses on the part
    # for 500 ms of the board's clock, so the watch latches STALL and backs the jaw off while it
    # does (as it would for a host slow to send the jaw back). Bring-up says so, clears it, keeps
    # the readings before it (telemetry at 25 Hz: about six of them) and finds the same stall
    # current; the gripper stays powered, the cycles place, no fault is left. The board also holds
    # current_grip_min_ma 500 before (as a stronger gripper's bring-up would leave it): the crush
    # line found (about 400 mA) lies under it, so the board takes it only after the new grip
    # threshold; _run_seed reads all four back.
    r = _run_seed(tmp_path, 2, (("current_stall_ms", 300), ("telemetry_hz", 25), ("current_grip_min_ma", 500)))
    assert "the board's stall watch backed the jaw off" in r.stdout, r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 4, 5, 6, 7, 8])
def test_bringup_on_more_benches(tmp_path, seed):
    _run_seed(tmp_path, seed, job_after=True)


def test_bringup_finds_a_270_degree_servo(tmp_path):
    # The reference arm with a 270-degree base servo (a DS3218-270: travel_deg 270, its joint 0
    # at servo 135 deg, the middle of its travel) on stand-in bench 2, whose base turns against
    # its joint: bring-up finds its direction, zero and range over its own travel, within the
    # issue's bounds of --print-truth for that arm, and writes an entry that keeps travel_deg
    # 270 and spans 2000 * 270 / range_deg us (by hand from the truth).
    from surepick.host.arms import files
    from surepick.shared_fsm import arm as arm_mod
    from surepick.shared_fsm.arm_reference import DESCRIPTION
    seed = 2
    d = arm_mod.validate(DESCRIPTION).to_dict()
    d["name"] = "base270"
    d["servos"]["base"].update(travel_deg=270, zero_deg=135.0)
    arm_file = tmp_path / "base270.toml"
    arm_file.write_text(files.to_toml(d))
    arm = ("--arm", str(arm_file))
    bench = _truth(seed, arm)
    truth = bench["servos"]
    assert truth["base"]["direction"] == -1 and truth["base"]["range_deg"] > 250.0, truth["base"]
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", str(seed)) + arm) as port:
        out = tmp_path / "out"
        r = _bringup(port, out, *arm)
        assert r.returncode == 0, r.stdout + r.stderr
        _check_found(out, seed, bench)
    from surepick.host.cli.arm import load_arm
    base = load_arm(str(out / "arm.toml"))[0].servo(0)
    assert base["travel_deg"] == 270
    want_span = 2000.0 * 270 / truth["base"]["range_deg"]
    assert abs((base["max_us"] - base["min_us"]) / want_span - 1.0) <= RANGE_TOLERANCE, base


@pytest.mark.parametrize("name", ["mearm", "eezybot_mk2"])
def test_bringup_on_a_parallel_arm_kit_places_its_first_part(tmp_path, name):
    # A MeArm and an EEZYbot MK2 on stand-in bench 1 (their presets on the board and in the
    # world): their own joint limits leave no room for the reference's range marks (EEZYbot's base
    # turns +-30 deg, MeArm's forearm rises 45 deg at most), so bring-up moves them inside and
    # says so; the bench's part is the description's 20 mm cube. Bring-up ends with its first part
    # placed, as the physics judge measured, and finds each servo's direction, zero and range
    # within the bounds of --print-truth: the shoulder's range too, though gravity pulls
    # the upper arm opposite ways at its two marks (each mark's sag taken off: servos.sag_deg).
    seed = 1
    arm = ("--arm", name)
    bench = _truth(seed, arm)
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", str(seed)) + arm) as port:
        out = tmp_path / "out"
        r = _bringup(port, out, *arm, "--apply")
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"the \w+ servo's range marks are at [-+]\d+ and [-+]\d+ deg", r.stdout), r.stdout
        _check_cycles(port, out, r.stdout)
    found = json.loads((out / "found.json").read_text())["servos"]
    for servo, t in bench["servos"].items():
        f = found[servo]
        print("%s seed %d %-8s zero %+.2f deg  range %+.2f%%" % (name, seed, servo, f["zero_deg"] - t["zero_deg"],
                                                               100.0 * (f["range_deg"] / t["range_deg"] - 1.0)))
        assert f["direction"] == t["direction"], (servo, f, t)
        assert abs(f["zero_deg"] - t["zero_deg"]) <= ZERO_TOLERANCE_DEG, (servo, f, t)
        assert abs(f["range_deg"] / t["range_deg"] - 1.0) <= RANGE_TOLERANCE, (servo, f, t)




@pytest.mark.parametrize("name", ["reference", "al5d_mg996r", "mearm", "eezybot_mk2"])
def test_range_marks_leave_room_inside_the_limits_the_board_checks(name):
    # For zeros off by up to the stand-in's 15 deg either way, every setpoint the range step can
    # send (from rest to its search's step past each mark, the joint as the board sees it) passes
    # the arm's own joint-limit check (Arm.check_limits, the shared code the firmware checks
    # poses with), the marks lie at least MIN_MARK_SPAN_DEG apart, and a zero that is right
    # leaves the reference's own marks where they were.
    from surepick.host.arms import files
    from surepick.host.bringup import servos as sv
    from surepick.host.bringup.steps import SEARCH_STEP_DEG     # how far past a mark the search may drive
    arm = files.load(name)[0]
    home = arm.home_deg()
    for servo in sv.servos_of(arm):
        if servo.is_gripper:
            continue
        q = list(home)
        for slot, deg in servo.range_pose.items():
            q[slot] = deg
        start = q[servo.slot]        # where the board holds the joint when the step begins
        for e in range(-15, 16, 3):
            lo, hi = sv.range_marks(arm, servo, q, lambda d, e=e: d + e)
            if hi - lo < sv.MIN_MARK_SPAN_DEG:
                # no room only where the zero puts rest, as the board sees it, at or past a limit
                # (bring-up then stops, naming the limits; the zero step could not have got there)
                ci = arm.coupled_index(servo.slot)
                low, high = arm.limit(servo.slot, q[ci] if ci >= 0 else 0.0)
                rest_seen = servo.marks["mid"].deg + e
                assert not low + sv.MARK_MARGIN_DEG < rest_seen < high - sv.MARK_MARGIN_DEG, (name, servo.name, e, lo, hi)
                continue
            for mark in (lo, hi):
                end = mark + e + (SEARCH_STEP_DEG if mark + e >= start else -SEARCH_STEP_DEG)
                n = int(abs(end - start) / 0.5) + 1
                for k in range(n + 1):
                    seen = list(q)
                    seen[servo.slot] = start + (end - start) * k / n
                    arm.check_limits(seen)      # raises Unreachable, naming the joint
            if e == 0 and name in ("reference", "al5d_mg996r"):
                assert (lo, hi) == (servo.marks["low"].deg, servo.marks["high"].deg), (servo.name, lo, hi)


def _confirmed(state_path):
    try:
        return json.loads(state_path.read_text())["steps"]
    except (OSError, ValueError):
        return {}


def test_a_killed_bringup_resumes_where_it_stopped(tmp_path):
    seed = 5
    bench = _truth(seed)
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        state = out / "bringup-state.json"
        p = subprocess.Popen([SUREPICK_BIN, "bringup", "--port", port, "--operator", "sim", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 600
        while "servo.shoulder.direction" not in _confirmed(state) and time.time() < deadline:
            assert p.poll() is None, p.stdout.read()
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)       # mid-step: somewhere in the shoulder's zero
        p.wait(timeout=30)
        p_out = p.stdout.read()
        before = _confirmed(state)
        assert "servo.shoulder.direction" in before and "write" not in before
        r = _bringup(port, out)
        assert r.returncode == 0, r.stdout + r.stderr
        ran = [line[4:] for line in r.stdout.splitlines() if line.startswith("--- ")]
        # nothing confirmed before the kill ran again; the rest ran in order
        assert not set(ran) & set(before), ran
        assert ran[0] == next(n for n in ("servo.shoulder.zero", "servo.shoulder.range", "servo.elbow.direction")
                              if n not in before)
        after = _confirmed(state)
        assert {k: after[k] for k in before} == before
        _check_found(out, seed, bench)
        # without --apply the board runs the description it started with, its servos found
        # mirrored flipped in its /arm.json (by the first run and the resumed one alike)
        mirrored = _check_mirrored(p_out + r.stdout, bench)
        from surepick.shared_fsm import kinematics
        start = kinematics.REFERENCE.to_dict()["servos"]
        board = _board_arm(tmp_path / "flash")["servos"]
        for name, entry in board.items():
            want = -start[name]["direction"] if name in mirrored else start[name]["direction"]
            assert entry["direction"] == want, (name, entry, mirrored)
            assert {k: v for k, v in entry.items() if k != "direction"} == \
                {k: v for k, v in start[name].items() if k != "direction"}, name
        _check_no_servo_settings(tmp_path / "flash")


def test_nothing_moves_while_the_estop_is_open(tmp_path):
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", "1")) as port:
        _control(port, "estop-press")
        time.sleep(0.5)
        seen = _control(port, "look")
        out = tmp_path / "out"
        r = _bringup(port, out, "--skip", "estop", "--skip", "rail")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "e-stop reads open: nothing moves" in r.stderr
        assert "run `surepick bringup` again" in r.stderr
        after = _control(port, "look")
        assert after["plant_ms"] > seen["plant_ms"]          # the world ran on meanwhile...
        assert max(abs(a - b) for a, b in zip(after["joints_deg"], seen["joints_deg"])) < 0.05   # ...the arm did not
        assert abs(after["jaw_mm"] - seen["jaw_mm"]) < 0.05
        steps = _confirmed(out / "bringup-state.json")
        assert not [k for k in steps if k.startswith("servo.")]


def test_bad_requests_are_one_line_errors(tmp_path):
    r = surepick("board", "--print-truth")
    assert r.returncode == 2 and "give --standin SEED" in r.stderr
    r = surepick("bringup", "--port", "socket://127.0.0.1:9", "--redo", "servo.knee.zero", "--out", tmp_path)
    assert r.returncode == 2 and "no step 'servo.knee.zero'" in r.stderr
    r = surepick("bringup", "--port", "socket://127.0.0.1:9", "--list", "--out", tmp_path)
    assert r.returncode == 0 and "servo.gripper.range" in r.stdout and "gripper.pot" in r.stdout
    assert r.stdout.split()[-2:] == ["cycle.first", "-"]
    assert not os.path.exists(tmp_path / "bringup-state.json")


def _board_record(state_path):
    try:
        return json.loads(state_path.read_text()).get("board")
    except (OSError, ValueError):
        return None


def test_a_bringup_killed_while_the_board_takes_a_mirrored_servo_gives_it_again(tmp_path):
    # Seed 2's base turns against its joint: bring-up ships the board's description with it
    # mirrored. Killed while that deploy is under way (the state says so), the rerun deploys it
    # again before it asks the firmware anything, then finishes within the bounds.
    seed = 2
    bench = _truth(seed)
    flash = tmp_path / "flash"
    with running_board(flash, "nominal", 0, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        state = out / "bringup-state.json"
        p = subprocess.Popen([SUREPICK_BIN, "bringup", "--port", port, "--operator", "sim", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 600
        while (_board_record(state) or {}).get("shipped", True) and time.time() < deadline:
            assert p.poll() is None, p.stdout.read()
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)       # the deploy of the mirrored base under way
        p.wait(timeout=30)
        assert _board_record(state) == {"directions": {"base": -1, "elbow": 1, "shoulder": 1, "wrist": 1},
                                        "shipped": False}
        assert "servo.base.direction" not in _confirmed(state)
        r = _bringup(port, out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.index("giving it again") < r.stdout.index("--- servo.base.direction")
        # the base already mirrored on the board: its direction step sees it turn with its joint
        assert json.loads(state.read_text())["steps"]["servo.base.direction"]["cmd_sign"] == 1
        _check_found(out, seed, bench)
        assert _board_record(state)["shipped"] is True
        assert _board_arm(flash)["servos"]["base"]["direction"] == -1


def _config(port, key):
    r = surepick("config", "get", key, "--port", port)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_dry_cycle_that_does_not_end_empty_stops_with_its_fault_latched_then_resumes(tmp_path):
    # A card left in the beam: the dry cycle's jaw closes on nothing but the beam says a part,
    # so the machine cannot say "nothing held" (SENSOR_DISAGREE). Bring-up stops naming it, the
    # fault stays latched (nothing cleared, nothing opened), the board's speeds are put back;
    # the card taken away and the fault cleared by the person, bring-up resumes at the dry cycle.
    seed = 1
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        r = _bringup(port, out)
        assert r.returncode == 0 and "--apply" in r.stdout, r.stdout + r.stderr
        speed = _config(port, "arm_speed_mdeg_s")
        _control(port, "beam-block")
        r = _bringup(port, out, "--apply")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "the dry cycle ended in SENSOR_DISAGREE" in r.stderr, r.stderr
        assert "nothing opened, nothing cleared" in r.stderr and "job status" in r.stderr, r.stderr
        status = surepick("job", "status", "--port", port).stdout
        assert "fault SENSOR_DISAGREE" in status, status
        state = json.loads((out / "bringup-state.json").read_text())
        assert "apply" in state["steps"] and "cycle.dry" not in state["steps"], state["steps"]
        assert "restore" not in state and _config(port, "arm_speed_mdeg_s") == speed
        _control(port, "beam-clear")
        assert surepick("job", "clear", "--port", port).returncode == 0
        r = _bringup(port, out, "--apply")
        assert r.returncode == 0, r.stdout + r.stderr
        ran = [line[4:] for line in r.stdout.splitlines() if line.startswith("--- ")]
        assert ran == ["cycle.dry", "cycle.first"], ran
        _check_cycles(port, out, r.stdout)


def test_an_estop_in_the_first_cycle_stops_bringup_with_the_part_still_held(tmp_path):
    # The stand-in bench of the `estop` scenario: the e-stop is pressed while the first cycle lifts
    # the part (the scenario's trigger, armed again when the part is put back on its pad). Bring-up
    # stops naming it and touches nothing: the fault stays latched, the board says it holds a part,
    # the jaw stays closed on it (wider than closed on nothing) and the arm stays where it froze
    # while the world runs on; the judge saw no drop.
    seed = 1
    with running_board(tmp_path / "flash", "estop", seed, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        r = _bringup(port, out, "--apply")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "the first cycle ended in ESTOP during LIFT" in r.stderr, r.stderr
        assert "nothing opened, nothing cleared" in r.stderr, r.stderr
        steps = _confirmed(out / "bringup-state.json")
        assert "cycle.dry" in steps and "cycle.first" not in steps
        closed_on_nothing = steps["cycle.dry"]["closed_on_nothing"]["jaw_mm"]
        seen = _control(port, "look")
        status = surepick("job", "status", "--port", port).stdout
        assert "fault ESTOP" in status and "a part is held between the fingers" in status, status
        later = _control(port, "look")
        assert later["plant_ms"] > seen["plant_ms"]
        assert max(abs(a - b) for a, b in zip(later["joints_deg"], seen["joints_deg"])) < 0.05
        from surepick.shared_fsm.config import Config
        present_mm = Config().jaw_present_min_um / 1000.0      # the firmware's "stopped on something"
        assert later["jaw_mm"] > closed_on_nothing + present_mm, (later, closed_on_nothing)
        verdict = _control(port, "status")["verdict"]
        assert verdict[0] != "dropped", verdict


def test_a_bringup_killed_in_its_dry_cycle_puts_the_speeds_back_and_does_it_again(tmp_path):
    # Killed while the board runs the dry cycle (its speeds slowed, saved in the state first):
    # the board's job goes on to its end. Run again, bring-up stops, saying the arm is busy (the
    # job still runs: the board takes no setting) or naming the fault the job latched (it ended).
    # Once the job has ended and its fault is cleared, bring-up puts the speeds back and does the
    # dry cycle again.
    seed = 1
    with running_board(tmp_path / "flash", "nominal", 0, extra=("--standin", str(seed))) as port:
        out = tmp_path / "out"
        assert _bringup(port, out).returncode == 0
        speed = _config(port, "arm_speed_mdeg_s")
        state = out / "bringup-state.json"
        p = subprocess.Popen([SUREPICK_BIN, "bringup", "--port", port, "--operator", "sim", "--out", str(out),
                              "--apply"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seen = ""
        while "the dry cycle: no part" not in seen:     # its speeds slowed, its job about to be sent
            line = p.stdout.readline()
            assert line, seen
            seen += line
        before = _control(port, "look")["joints_deg"]
        deadline = time.time() + 120
        while time.time() < deadline:                    # the arm moves: the board runs the job
            if max(abs(a - b) for a, b in zip(_control(port, "look")["joints_deg"], before)) > 1.0:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        assert "restore" in json.loads(state.read_text())
        assert "cycle.dry" not in _confirmed(state)
        r = _bringup(port, out, "--apply")
        print("rerun after the kill: exit %d %s" % (r.returncode, r.stderr.strip()[:160]))
        if r.returncode != 0:               # the job still ran, or it ended and latched its fault
            assert "the arm is busy" in r.stderr or "latched fault" in r.stderr, r.stderr
            deadline = time.time() + 300
            while "state IDLE" not in surepick("job", "status", "--port", port).stdout and time.time() < deadline:
                time.sleep(0.5)
            surepick("job", "clear", "--port", port)
            r = _bringup(port, out, "--apply")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "restore" not in json.loads(state.read_text()) and _config(port, "arm_speed_mdeg_s") == speed
        ran = [line[4:] for line in r.stdout.splitlines() if line.startswith("--- ")]
        assert ran == ["cycle.dry", "cycle.first"], ran
        _check_cycles(port, out, r.stdout)
