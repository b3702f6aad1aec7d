import pytest


@pytest.fixture
def flash(tmp_path):
    # An empty flash directory for a board a test starts (a virtual board's whole filesystem).
    d = tmp_path / "flash"
    d.mkdir()
    return d
