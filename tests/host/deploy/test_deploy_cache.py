# The .mpy cache of host/deploy/artifacts.py: a warm build compiles nothing and gives byte-identical
# artifacts; a changed source recompiles exactly that module; another mpy-cross (its banner
# is part of the key) recompiles everything; a damaged entry is compiled again. No board.
import pytest

from surepick.host import deploy as dp
from surepick.host.deploy import artifacts

try:
    EXE = dp.find_mpy_cross()
except dp.DeployError:
    EXE = None
pytestmark = pytest.mark.skipif(EXE is None, reason="no mpy-cross")


def _build(sources, cache_dir, **kw):
    st = dp.BuildStats()
    arts = dp.build(sources, False, EXE, cache_dir=cache_dir, stats=st, **kw)
    return {a.board_path: a.sha256 for a in arts}, st


def test_warm_build_compiles_nothing_and_matches(sources, tmp_path):
    cache = tmp_path / "cache"
    cold, st = _build(sources, cache)
    n_mpy = sum(1 for p in cold if p.endswith(".mpy"))
    assert st.compiled == n_mpy > 10 and st.cached == 0
    warm, st = _build(sources, cache)
    assert warm == cold and st.compiled == 0 and st.cached == n_mpy
    fresh, st = _build(sources, cache, cache=False)        # the cache gives what mpy-cross gives
    assert fresh == cold and st.compiled == n_mpy and st.cached == 0


def test_one_changed_source_recompiles_one_module(sources, tmp_path):
    cache = tmp_path / "cache"
    cold, _ = _build(sources, cache)
    f = sources / "shared_fsm" / "states.py"
    f.write_text(f.read_text() + "\n_CHANGED = 1\n")
    warm, st = _build(sources, cache)
    assert st.compiled == 1
    assert [p for p in warm if warm[p] != cold[p]] == ["/lib/surepick/shared_fsm/states.mpy"]


def test_another_mpy_cross_recompiles_everything(sources, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cold, st0 = _build(sources, cache)
    real = dp.mpy_cross_version(EXE)
    monkeypatch.setattr(artifacts, "mpy_cross_version", lambda exe: (real[0], real[1], real[2] + " (other)"))
    _, st = _build(sources, cache)
    assert st.compiled == st0.compiled and st.cached == 0


def test_a_damaged_cache_entry_is_compiled_again(sources, tmp_path):
    cache = tmp_path / "cache"
    cold, st0 = _build(sources, cache)
    entries = sorted(cache.glob("*.mpy"))
    entries[0].write_bytes(b"garbage")
    warm, st = _build(sources, cache)
    assert warm == cold and st.compiled == 1 and st.cached == st0.compiled - 1
