# The wheel carries everything: built from a copy of the source (`pip wheel --no-deps`, the
# pinned setuptools backend in an isolated build), installed (not editable) into a clean venv
# with its dependencies pinned by requirements.lock, then used from a directory where the repo's
# firmware/, host/, ... cannot be imported: a simulated cycle (the MJCF), a virtual board (its boot shim,
# vboard_ctl, the unix micropython) and a deploy to it that ends with the firmware's HELLO
# (main.py, the HAL package, everything the manifest ships).
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO

from surepick.host.cli.board import READY_PREFIX
from surepick.host.source_tree import CODE_FOLDERS

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env, timeout):
    p = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, (cmd, p.stdout[-3000:], p.stderr[-3000:])
    return p


def _tracked_package_files():
    # What git tracks in the code folders (not caches, not anything generated in place).
    out = subprocess.run(["git", "ls-files", "-z", *CODE_FOLDERS], cwd=str(REPO), capture_output=True,
                         check=True).stdout.decode()
    return {p for p in out.split("\0") if p}


def test_pyproject_lists_every_package_folder():
    # pyproject.toml names each package (the surepick namespace maps onto the top-level folders):
    # a folder with an __init__.py missing there would be left out of the wheel.
    import tomllib
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"surepick." + p[:-len("/__init__.py")].replace("/", ".")
             for p in _tracked_package_files() if p.endswith("/__init__.py")}
    assert listed == found, sorted(listed ^ found)


def test_wheel_installs_and_runs_sim_board_and_deploy(tmp_path):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["SUREPICK_MPY_CACHE"] = str(tmp_path / "mpy-cache")
    # a copy of the tracked sources, so the build leaves nothing in the working tree and sees
    # nothing untracked
    src = tmp_path / "src"
    tracked = _tracked_package_files()
    for rel in sorted(tracked) + ["pyproject.toml", "README.md"]:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, src / rel)
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "-w", wheels], tmp_path, env, 600)
    (wheel,) = wheels.glob("surepick-*.whl")
    inside = {n[len("surepick/"):] for n in zipfile.ZipFile(wheel).namelist() if n.startswith("surepick/")}
    assert inside == tracked, sorted(inside ^ tracked)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, env, 300)
    bin_ = venv / "bin"
    _run([bin_ / "python", "-m", "pip", "install", "--quiet", "-c", REPO / "requirements.lock", wheel],
         tmp_path, env, 900)

    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([bin_ / "python", "-c", "import surepick.host; print(surepick.host.__file__)"], work, env, 60).stdout
    assert where.strip().startswith(str(venv)), where      # the installed copy, not the repo's

    # a simulated cycle: exit 0 only when verified placed; the report written
    out = work / "run"
    r = _run([bin_ / "surepick", "sim", "run", "--scenario", "nominal", "--out", out], work, env, 300)
    assert (out / "report.json").exists(), r.stdout

    # a virtual board from the installed package, and a deploy to it
    flash = work / "flash"
    flash.mkdir()
    board = subprocess.Popen([str(bin_ / "surepick"), "board", "--listen", "127.0.0.1:0", "--flash", str(flash)],
                             cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = board.stdout.readline()
        assert line.startswith(READY_PREFIX), (line, board.poll())
        address = line[len(READY_PREFIX):].strip()
        d = _run([bin_ / "surepick", "deploy", "--port", address], work, env, 300)
        assert "hello from " in d.stdout + d.stderr, d.stdout + d.stderr
    finally:
        board.terminate()
        try:
            board.wait(30)
        except subprocess.TimeoutExpired:
            board.kill()
            board.wait(10)
    assert (flash / "main.py").exists() and (flash / "lib" / "surepick" / "firmware" / "hal" / "contract.mpy").exists()
