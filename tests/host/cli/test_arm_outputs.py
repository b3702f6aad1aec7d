# Where `surepick arm model --out` and `arm check --map` write, checked before anything is
# written: the description itself (which the write would replace), a directory, a missing
# directory or a map name the plotter cannot write are each one line naming the flag, exit 2,
# no traceback, and the description left byte for byte as it was.
import pytest

from surepick.host.arms import files, presets
from tests.support.cli import surepick


@pytest.fixture
def arm_file(tmp_path):
    path = tmp_path / "my_arm.toml"
    path.write_text(files.to_toml(presets.get("reference")))
    return path


def _refused(args, needle, arm_file):
    before = arm_file.read_bytes()
    r = surepick(*args)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and len(err) == 1, err
    assert needle in err[0], err
    assert arm_file.read_bytes() == before


def test_model_out_onto_the_description_keeps_it(arm_file, tmp_path):
    _refused(["arm", "model", arm_file, "--out", arm_file], "the arm description itself", arm_file)
    same = tmp_path / "." / arm_file.name
    _refused(["arm", "model", arm_file, "--out", same], "--out", arm_file)


def test_check_map_onto_the_description_keeps_it(arm_file):
    _refused(["arm", "check", arm_file, "--map", arm_file], "the arm description itself", arm_file)


@pytest.mark.parametrize("verb", ["model", "check"])
def test_an_output_that_cannot_be_a_file_is_one_line(arm_file, tmp_path, verb):
    flag = "--out" if verb == "model" else "--map"
    name = "m.xml" if verb == "model" else "m.png"
    _refused(["arm", verb, arm_file, flag, tmp_path], "directory", arm_file)
    _refused(["arm", verb, arm_file, flag, tmp_path / "missing" / name], "does not exist", arm_file)


def test_a_map_the_plotter_cannot_write_is_refused_before_drawing(arm_file, tmp_path):
    _refused(["arm", "check", arm_file, "--map", tmp_path / "map.toml"], ".png", arm_file)
    assert not (tmp_path / "map.toml").exists()
