import shutil

import pytest

from surepick.host import deploy as dp


@pytest.fixture
def sources(tmp_path):
    # A private copy of the board code (the folders deploy builds from), so a test can change one file.
    dst = tmp_path / "src" / "surepick"
    for folder in ("firmware", "shared_fsm"):
        shutil.copytree(dp.source_root() / folder, dst / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return dst
