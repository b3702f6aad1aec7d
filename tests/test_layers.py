# The code folders are layers (README.md, layout and the layer rule): an import pointing up a layer
# fails here, with the file and line. tools/import_graph.py is the same check for a person.
import subprocess
import sys

from tests.conftest import REPO


def test_no_import_points_up_a_layer():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "import_graph.py")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no upward imports" in proc.stdout


def test_the_check_catches_an_upward_import(tmp_path):
    # The same checker on a copy of the code with one upward import added must fail, naming it.
    import shutil
    from surepick.host.source_tree import CODE_FOLDERS
    pkg = tmp_path / "copy"
    for folder in CODE_FOLDERS:
        shutil.copytree(REPO / folder, pkg / folder, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    (pkg / "sim" / "upward.py").write_text("from surepick.host.engines import inproc  # noqa\n")
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "import_graph.py"), "--root", str(pkg)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "sim/upward.py:1 imports surepick.host.engines.inproc (sim -> host.engines points up)" in proc.stderr
