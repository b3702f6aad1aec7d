# `surepick config diff --arm NAME|FILE`: the board's /arm.json, read over the link (ARM_READ),
# against a local description field by field. A real virtual board (the firmware under
# micropython) with a real socket link; the expected differences are the presets' own figures.
import json

import pytest

from surepick.host.arms import files, presets
from tests.support.board_cli import running_board
from tests.support.cli import surepick
from tests.support.needs import NEEDS_MICROPYTHON


@pytest.fixture(scope="module")
def mearm_board(tmp_path_factory):
    flash = tmp_path_factory.mktemp("diffarm") / "flash"
    with running_board(flash, "nominal", 2, extra=("--arm", "mearm")) as port:
        yield port, flash


@NEEDS_MICROPYTHON
def test_the_same_description_shows_no_difference(mearm_board):
    port, flash = mearm_board
    r = surepick("config", "diff", "--arm", "mearm", "--port", port, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("every setting is at its default")
    assert lines[1] == "the board's /arm.json: mearm (parallel); mearm: mearm (parallel)"
    n = len(json.loads((flash / "arm.json").read_text())["bench"])       # a whole file: every field
    assert lines[2].startswith("the board runs this description (") and int(lines[2].split("(")[1].split()[0]) > n


@NEEDS_MICROPYTHON
def test_a_changed_field_is_named_with_both_values(mearm_board, tmp_path):
    port, _ = mearm_board
    d = presets.get("mearm")
    d["geometry"]["upper_arm_mm"] = 82.5
    d["servos"]["elbow"]["trim_us"] = 12
    d["bench"]["part_g"] = 35.0
    f = tmp_path / "my_mearm.toml"
    f.write_text(files.to_toml(d))
    r = surepick("config", "diff", "--arm", str(f), "--port", port, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    rows = [line.strip() for line in out if line.startswith("  ")]
    assert rows == ["geometry.upper_arm_mm: board 80, %s 82.5" % f,
                    "servos.elbow.trim_us: board 0, %s 12" % f,
                    "bench.part_g: board 20, %s 35" % f], out
    assert out[-1] == "3 fields differ (`surepick deploy --arm %s` ships this description)" % f
    r = surepick("config", "diff", "--arm", str(f), "--json", "--port", port, timeout=120)
    got = json.loads(r.stdout)
    assert got["settings"] == {}
    assert {(x["field"], x["board"], x["local"]) for x in got["arm"]["differences"]} == {
        ("geometry.upper_arm_mm", 80.0, 82.5), ("servos.elbow.trim_us", 0, 12), ("bench.part_g", 20.0, 35.0)}


@NEEDS_MICROPYTHON
def test_another_kind_of_arm_differs_in_kind_and_its_joints(mearm_board):
    port, _ = mearm_board
    r = surepick("config", "diff", "--arm", "reference", "--port", port, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  kind: board \"parallel\", reference \"serial\"" in r.stdout
    assert "  joints.wrist.min_deg: board (none), reference -180" in r.stdout
    assert "  geometry.upper_arm_mm: board 80, reference 105" in r.stdout


@NEEDS_MICROPYTHON
def test_a_board_without_arm_json_runs_the_reference(tmp_path):
    with running_board(tmp_path / "flash", "nominal", 2) as port:
        r = surepick("config", "diff", "--arm", "reference", "--port", port, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "the board has no /arm.json: it runs the reference arm; reference: reference (serial)" in r.stdout
        assert "the board runs this description" in r.stdout


def test_arm_is_for_diff_and_a_bad_file_is_refused_before_any_board(tmp_path):
    r = surepick("config", "list", "--arm", "mearm", "--port", "socket://127.0.0.1:1")
    assert r.returncode == 2 and "--arm is for `diff`" in r.stderr
    r = surepick("config", "diff", "--arm", str(tmp_path / "nope.toml"), "--port", "socket://127.0.0.1:1")
    assert r.returncode == 2 and "no such file and no such preset" in r.stderr, r.stderr
