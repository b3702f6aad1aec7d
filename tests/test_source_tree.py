# One module knows where surepick's files are (host/source_tree.py); no other module in the
# package, the tools or the CPython benches works a path out from its own location.
import re

from surepick.host import source_tree
from tests.conftest import REPO

# A path computed from a module's own place: Path(__file__), os.path.dirname(__file__), walking up.
OWN_PLACE = re.compile(r"Path\(__file__\)|dirname\((os\.path\.abspath\()?__file__|\.parents\[|\.parent\.parent")


def test_only_source_tree_computes_paths_from_its_own_place():
    offenders = []
    for folder in source_tree.CODE_FOLDERS + ("tools",):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == REPO / "host" / "source_tree.py" or "node_modules" in path.parts:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if OWN_PLACE.search(line):
                    offenders.append("%s:%d: %s" % (path.relative_to(REPO), n, line.strip()))
    assert not offenders, "\n".join(offenders)


def test_source_tree_names_this_checkout():
    # The checkout the tests run from (conftest finds it from the tests' own place).
    assert source_tree.CHECKOUT == REPO
    assert source_tree.PACKAGE == REPO
    assert (source_tree.import_root() / "surepick" / "shared_fsm" / "config.py").is_file()
    assert (source_tree.import_root() / "surepick" / "firmware" / "app.py").is_file()
    assert source_tree.package_file("firmware", "manifest.py").is_file()
    assert source_tree.is_checkout()
