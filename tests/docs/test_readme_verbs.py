# The README's table of verbs is generated from the CLI's own table (tools/readme_verbs.py): it
# fails here when a verb or an action was added, removed or reworded without regenerating it, and
# the verbs it lists are the ones `surepick --help` offers (the installed command, an independent
# look at the same table).
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import readme_verbs  # noqa: E402


def _rows(text):
    head, rest = text.split(readme_verbs.BEGIN, 1)
    return [line for line in rest.split(readme_verbs.END, 1)[0].splitlines() if line.startswith("| `surepick ")]


def _listed_in_help(out):
    # argparse lists each sub-command on a line of its own, indented four spaces
    return re.findall(r"^    ([a-z][a-z-]*)(?:\s|$)", out, re.M)


def test_the_readme_verbs_table_is_what_the_generator_prints():
    text = (REPO / "README.md").read_text()
    assert readme_verbs.replaced(text) == text, (
        "README.md's verbs table is stale: run `python tools/readme_verbs.py --write`")


def test_the_table_lists_the_verbs_surepick_help_offers():
    out = subprocess.run([str(Path(sys.executable).parent / "surepick"), "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    offered = set(_listed_in_help(out))
    listed = {re.match(r"\| `surepick ([a-z-]+)`", row).group(1) for row in _rows((REPO / "README.md").read_text())}
    assert listed == offered and len(offered) >= 15, (sorted(listed ^ offered), len(offered))


def test_a_verbs_actions_are_the_ones_its_parser_accepts():
    # `job`'s actions in the table, against what `surepick job --help` lists
    out = subprocess.run([str(Path(sys.executable).parent / "surepick"), "job", "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    offered = _listed_in_help(out)
    (row,) = [r for r in _rows((REPO / "README.md").read_text()) if r.startswith("| `surepick job`")]
    assert re.findall(r"`([a-z-]+)`", row.split("|")[2]) == offered


def test_a_stale_table_is_found_and_rewritten(tmp_path):
    text = (REPO / "README.md").read_text()
    stale = text.replace(_rows(text)[0], "| `surepick arm` | | an old description | |")
    assert readme_verbs.replaced(stale) != stale
    assert readme_verbs.replaced(stale) == text


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no verbs table"):
        readme_verbs.replaced("# surepick\n")
