# The arm description is the one source of the servos' pins and pulse calibration on the board
# (docs/arm-description.md, "On the board"), under the real `micropython` (tests/mpy/
# fw_servo_settings.py boots the firmware's App once per case with the scripted stand-in HAL).
# Expected pulses are worked out here by hand from the servo formula in docs/conventions.md:
# pulse = min_us + servo_deg / 180 * (max_us - min_us) + trim_us, mirrored for direction -1.
import copy
import json

from surepick.host.arms import files
from surepick.shared_fsm import arm as arm_mod
from surepick.shared_fsm import link
from surepick.shared_fsm.arm_reference import DESCRIPTION
from tests.support import mpy
from tests.support.needs import NEEDS_MICROPYTHON

REF = arm_mod.validate(DESCRIPTION).to_dict()


def _pulse(min_us, max_us, trim_us, servo_deg, direction=1):
    if direction < 0:
        servo_deg = 180 - servo_deg
    return min_us + int(servo_deg * (max_us - min_us) // 180) + trim_us


def _case(root, name, arm=None, config=None):
    d = root / name
    d.mkdir()
    if arm is not None:
        (d / "arm.json").write_text(json.dumps(arm))
    if config is not None:
        (d / "config.json").write_text(json.dumps(config))


@NEEDS_MICROPYTHON
def test_servo_pins_and_pulses_come_from_the_description_and_old_settings_never_drive(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    flash = tmp_path / "flash"
    flash.mkdir()
    calibrated = copy.deepcopy(REF)
    calibrated["servos"]["base"].update({"gpio": 7, "min_us": 600, "max_us": 2400, "trim_us": 10, "direction": -1})
    calibrated["servos"]["shoulder"].update({"min_us": 700, "max_us": 2300, "trim_us": -20})
    calibrated["servos"]["gripper"].update({"gpio": 9})
    _case(cases, "a_calibrated", arm=calibrated)
    # an old board's config.json that says what the description says: noted, the arm runs
    _case(cases, "b_old_agrees", config={"version": 1, "board": {"pin_servo0": 2, "servo1_trim_us": 0,
                                                                  "telemetry_hz": 5}})
    # ... and one that says otherwise: the arm stays still, jobs are refused, each key named
    _case(cases, "c_old_differs", config={"version": 1, "board": {"pin_servo0": 7, "servo2_inverted": 1,
                                                                   "servo3_min_us": 500}})
    clash = copy.deepcopy(REF)
    clash["servos"]["base"]["gpio"] = 13           # the board's default pin_estop
    _case(cases, "d_pin_clash", arm=clash)
    mearm = files.load("mearm")[0].to_dict()
    _case(cases, "e_parallel", arm=mearm)
    # 270-degree servos: the pulse spans travel_deg, not 180
    wide = copy.deepcopy(REF)
    wide["servos"]["base"].update({"min_us": 600, "max_us": 2400, "travel_deg": 270, "zero_deg": 100})
    wide["servos"]["shoulder"].update({"travel_deg": 270})
    wide["servos"]["elbow"].update({"travel_deg": 270, "direction": -1})
    _case(cases, "f_travel_270", arm=wide)
    proc = mpy.run("fw_servo_settings.py", cases, flash, timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "END" in out, proc.stderr.decode()[-3000:] + out[-2000:]
    res = mpy.results(out)
    pins, start, saved, rejects = {}, {}, {}, {}
    for line in out.splitlines():
        w = line.split()
        if w[:1] == ["PINS"]:
            pins[w[1]] = tuple(int(v) for v in w[2:])
        elif w[:1] == ["START"]:
            start[w[1]] = tuple(int(v) for v in w[2:])
        elif w[:1] == ["SAVED"]:
            saved[w[1]] = dict(kv.split("=") for kv in w[2:])
        elif w[:1] == ["REJECT"]:
            rejects.setdefault(w[1], []).append(tuple(w[2:]))

    # the rest pose (0, 90, -90, -90) deg and a 30 mm jaw: servo angles 90, 90, 90, 90 and 120
    assert pins["a_calibrated"] == (7, 3, 4, 5, 9)
    assert start["a_calibrated"] == (_pulse(600, 2400, 10, 90, -1), _pulse(700, 2300, -20, 90),
                                     _pulse(500, 2500, 0, 90), _pulse(500, 2500, 0, 90), _pulse(500, 2500, 0, 120))
    assert start["a_calibrated"][:2] == (1510, 1480)
    assert res["a_calibrated_job_code"] == 0 and res["a_calibrated_arm_pulses"] > 0
    assert "a_calibrated" not in rejects

    assert pins["b_old_agrees"] == (2, 3, 4, 5, 6)
    assert res["b_old_agrees_job_code"] == 0
    assert rejects["b_old_agrees"] == [("config", "pin_servo0", "moved"), ("config", "servo1_trim_us", "moved")]
    assert saved["b_old_agrees"] == {"telemetry_hz": "5"}      # agreeing old keys go at the next save

    assert res["c_old_differs_job_code"] == link.E_STATE and res["c_old_differs_job_invalid"] == 1
    assert pins["c_old_differs"] == (-1,) * 5 and start["c_old_differs"] == (0,) * 5
    assert res["c_old_differs_arm_pulses"] == 0
    assert rejects["c_old_differs"] == [
        ("config", "pin_servo0", "moved"), ("config", "servo2_inverted", "moved"),
        ("config", "servo3_min_us", "moved"), ("config", "pin_servo0", "differs"),
        ("config", "servo2_inverted", "differs")]
    # a save keeps the contradicted ones (the evidence stays until the owner settles it)
    assert saved["c_old_differs"] == {"pin_servo0": "7", "servo2_inverted": "1"}

    assert res["d_pin_clash_job_code"] == link.E_STATE and res["d_pin_clash_job_invalid"] == 1
    assert pins["d_pin_clash"] == (-1,) * 5 and res["d_pin_clash_arm_pulses"] == 0
    assert rejects["d_pin_clash"] == [("arm", "servos.base.gpio", "relation")]

    m = mearm["servos"]
    assert pins["e_parallel"] == (m["base"]["gpio"], m["shoulder"]["gpio"], m["elbow"]["gpio"], -1,
                                  m["gripper"]["gpio"])
    assert start["e_parallel"][3] == 0           # no wrist servo: its slot never gets a pulse

    # by hand, pulse = min_us + servo_deg / travel_deg * (max_us - min_us) (+ trim), mirrored over
    # the travel for direction -1. At rest: the base at servo 100 deg (its zero), 600 + 100/270 *
    # 1800 = 1266.7; the shoulder at 90 deg, 500 + 90/270 * 2000 = 1166.7; the elbow at 90 deg
    # mirrored to 180, 500 + 180/270 * 2000 = 1833.3; the wrist and gripper as before (180).
    assert start["f_travel_270"] == (1266, 1166, 1833, 1500, 1833)
    assert res["f_travel_270_job_code"] == 0
