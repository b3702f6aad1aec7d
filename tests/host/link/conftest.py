import shutil

import pytest

from tests.support.bench import short_runtime_dir


@pytest.fixture
def hub_rundir(monkeypatch):
    # A private runtime directory: this test's hubs only (short: it holds Unix sockets).
    d = short_runtime_dir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", d)
    monkeypatch.delenv("SUREPICK_HUB", raising=False)
    yield d
    shutil.rmtree(d, ignore_errors=True)
