# Hostile arm descriptions: every field of the reference description made wrong (another type,
# NaN, infinities, a huge number, a table, a list), unknown and missing fields, deep nesting,
# limits that leave no workspace, a pad out of reach. On the host `surepick arm check` exits 2
# with one line naming the field; on the board (real micropython, scripted HAL) the firmware
# boots, never powers the arm, refuses the job with arm_invalid and names the field in HELLO.
import copy
import json

import pytest

from surepick.host.arms import files
from surepick.host.cli.main import main
from surepick.shared_fsm import arm as arm_mod
from surepick.shared_fsm.arm_reference import DESCRIPTION
from surepick.shared_fsm import link
from tests.support import mpy
from tests.support.needs import NEEDS_MICROPYTHON

FULL = arm_mod.validate(DESCRIPTION).to_dict()
BAD_VALUES = {"string": "12", "nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"),
              "huge": 1e300, "table": {"x": 1}, "list": [1, 2], "bool": True}


def leaves(d, path=()):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from leaves(v, path + (k,))
        else:
            yield path + (k,), v


def with_value(path, value):
    d = copy.deepcopy(FULL)
    t = d
    for k in path[:-1]:
        t = t[k]
    t[path[-1]] = value
    return d


def hostile_cases():
    out = []
    for path, good in leaves(FULL):
        for kind, bad in BAD_VALUES.items():
            if isinstance(good, str) and kind == "string":
                bad = 12
            out.append(("%s=%s" % (".".join(path), kind), with_value(path, bad), ".".join(path)))
    d = copy.deepcopy(FULL)
    d["geometry"]["upper_arm_length"] = 100.0
    out.append(("unknown_field", d, "geometry.upper_arm_length"))
    d = copy.deepcopy(FULL)
    del d["servos"]["elbow"]["gpio"]
    out.append(("missing_field", d, "servos.elbow.gpio"))
    d = copy.deepcopy(FULL)
    del d["sensors"]
    out.append(("missing_section", d, "sensors"))
    out.append(("no_workspace", with_value(("joints", "elbow", "max_deg"), -180.0), "joints.elbow.min_deg"))
    d = copy.deepcopy(FULL)
    d["joints"]["elbow"].update({"coupled_to": "shoulder", "coupled_min_deg": 10.0, "min_per_deg": 1.0})
    out.append(("coupled_no_workspace", d, "joints.elbow.coupled_min_deg"))
    out.append(("wrong_kind", with_value(("kind",), "delta"), "kind"))
    return out


CASES = hostile_cases()


def test_every_field_is_checked():
    # every leaf of the full description is in the cases, eight ways wrong
    assert len(CASES) >= 8 * len(list(leaves(FULL)))


def _check(path, capsys):
    code = main(["arm", "check", str(path), "--no-map"])
    cap = capsys.readouterr()
    return code, cap.err.strip().splitlines(), cap.out


def test_hostile_descriptions_exit_2_with_one_line_naming_the_field(tmp_path, capsys):
    for name, d, field in CASES:
        path = tmp_path / "arm.json"
        path.write_text(json.dumps(d))          # NaN and Infinity as Python's json writes them
        code, err, out = _check(path, capsys)
        assert code == 2, (name, out)
        assert len(err) == 1, (name, err)
        assert "'%s'" % field in err[0] or ("'%s'" % field.split(".")[0]) in err[0], (name, err)


def test_hostile_toml_and_broken_files(tmp_path, capsys):
    cases = {
        "nan.toml": (files.to_toml(FULL).replace("base_height_mm = 70.0", "base_height_mm = nan"), "base_height_mm"),
        "inf.toml": (files.to_toml(FULL).replace("tool_mm = 95.0", "tool_mm = -inf"), "tool_mm"),
        "syntax.toml": ("name = \n", "not a TOML"),
        "deep.json": ("[" * 100000 + "]" * 100000, "deep.json"),
        "binary.toml": (b"\xff\xfe\x00garbage", "not UTF-8"),
        "huge.toml": ("notes = \"" + "x" * 70000 + "\"\n", "bytes"),
    }
    for fname, (text, needle) in cases.items():
        path = tmp_path / fname
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        code, err, _ = _check(path, capsys)
        assert code == 2 and len(err) == 1 and needle in err[0], (fname, err)
    code, err, _ = _check(tmp_path / "nothing_here.toml", capsys)
    assert code == 2 and len(err) == 1 and "no such preset" in err[0]


@pytest.mark.parametrize("field", [("geometry", "tool_mm"), ("servos", "base", "gpio"), ("bench", "pad_x_mm")])
@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_a_400_digit_integer_is_one_line_naming_the_field(tmp_path, field, fmt):
    # TOML and JSON integers have no bound: one in a float field used to overflow float() in the
    # shared checks (a traceback), one in an integer field printed its 400 digits as the value.
    from tests.support.cli import surepick
    d = with_value(field, int("9" * 400))
    path = tmp_path / ("arm." + fmt)
    path.write_text(files.to_toml(d) if fmt == "toml" else json.dumps(d))
    for args in (["arm", "check", path, "--no-map"], ["arm", "model", path, "--out", tmp_path / "m.xml"]):
        r = surepick(*args)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and len(err) == 1, err
        assert str(path) in err[0] and "'%s'" % ".".join(field) in err[0] and "digits" in err[0], err
        assert len(err[0]) < 300, err
    assert not (tmp_path / "m.xml").exists()


def test_a_pad_out_of_reach_is_refused_naming_the_pose(tmp_path, capsys):
    d = with_value(("bench", "pad_x_mm"), 600.0)
    path = tmp_path / "far.json"
    path.write_text(json.dumps(d))
    code, err, _ = _check(path, capsys)
    assert code == 2
    assert any("bench pick pose x=600.0" in line and "too far" in line for line in err), err


def test_lengths_no_one_shipped_pass(tmp_path, capsys):
    # the reference with 120 mm and 115 mm links: valid, its bench in reach
    d = copy.deepcopy(FULL)
    d["geometry"]["upper_arm_mm"], d["geometry"]["forearm_mm"] = 120.0, 115.0
    path = tmp_path / "long.json"
    path.write_text(json.dumps(d))
    code, err, out = _check(path, capsys)
    assert code == 0 and not err, err
    assert "pick " in out and "place_approach" in out


BOARD_CASES = {
    "type": with_value(("geometry", "upper_arm_mm"), "105"),
    "range": with_value(("servos", "elbow", "gpio"), 27),
    "no_workspace": with_value(("joints", "elbow", "max_deg"), -180.0),
    "unknown": with_value(("bench", "pad_z_mm"), 1.0),
}


@NEEDS_MICROPYTHON
def test_the_board_boots_on_hostile_descriptions_with_the_arm_still(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    flash = tmp_path / "flash"
    flash.mkdir()
    for name, d in BOARD_CASES.items():
        (cases / (name + ".json")).write_text(json.dumps(d))
    (cases / "nan.json").write_text(json.dumps(with_value(("geometry", "forearm_mm"), float("nan"))))
    (cases / "inf.json").write_text(json.dumps(with_value(("geometry", "tool_mm"), 1e999)))
    good = json.dumps(FULL)
    (cases / "torn.json").write_text(good[:len(good) // 2])
    (cases / "erased.json").write_bytes(b"\xff" * 512)
    (cases / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (cases / "zz_valid.json").write_text(good)
    far = with_value(("bench", "pad_x_mm"), 600.0)
    (cases / "zz_far_pad.json").write_text(json.dumps(far))
    proc = mpy.run("fw_arm_files.py", cases, flash, 600000, timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "END" in out, proc.stderr.decode()[-3000:] + out[-2000:]
    res = mpy.results(out)
    fields = dict(line.split()[1:3] for line in out.splitlines() if line.startswith("FIELD"))
    for name in list(BOARD_CASES) + ["nan", "inf", "torn", "erased", "deep"]:
        assert res[name + "_job_code"] == link.E_STATE and res[name + "_job_invalid"] == 1, (name, out[-3000:])
        assert res[name + "_arm_pulses"] == 0, name       # the arm's PWM never came on
        assert res[name + "_hello_arm"] == 1, name        # HELLO names the arm file first
    assert fields["type"] == "geometry.upper_arm_mm"
    assert fields["range"] == "servos.elbow.gpio"
    assert fields["unknown"] == "bench.pad_z_mm"
    # the control: a valid description boots as always and takes the job
    assert res["zz_valid_job_code"] == 0 and res["zz_valid_arm_pulses"] > 0
    # a pad out of reach is a host check; on the board the job to it is refused as unreachable
    # (link E_BAD_VALUE) and the arm stays where the boot put it
    assert res["zz_far_pad_job_code"] == link.E_BAD_VALUE and res["zz_far_pad_hello_arm"] == 0
