# 10,000 random and mutated lines through firmware/cmdparse.py under the real `micropython`:
# error replies only for bad input, silence for REPL text and echoes, no exception. What a line
# costs the loop is a speed, so it is a benchmark's figure, not asserted here (a loaded or slower
# machine would fail a wall-time bound): tools/bench/cmdfuzz_timing.py, docs/performance.md.

import pytest

from tests.support import mpy as host_helpers  # noqa: E402

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def run_fuzz(seed, count):
    proc = host_helpers.run("cmdparse_fuzz.py", seed, count, timeout=300)
    text = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode() + text
    assert "FAIL" not in text, text
    return host_helpers.results(text), text


def check(res, count):
    assert res["lines"] == count
    assert res["exceptions"] == 0 and res["fails"] == 0
    assert res["err_OK"] == res["made_valid"]  # every valid request accepted, nothing else
    # silence = REPL text, random lines without RS, echoes; everything else was answered
    assert res["silent"] == res["err_NOT_FRAME"] + res["err_DIRECTION"]
    assert res["err_DIRECTION"] == res["made_echo"]
    assert res["replies"] == count - res["silent"]
    assert res["err_TOO_LONG"] >= res["made_overlong"]
    assert res["err_VERSION"] == res["made_version"]
    assert res["reader_valid"] == res["made_valid"] + res["reader_resync_recovered"]
    assert res["reader_overlong_frames"] >= res["made_overlong"]


def test_cmdparse_fuzz_10k_lines_under_micropython():
    res, _ = run_fuzz(20240601, 10000)
    check(res, 10000)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_cmdparse_fuzz_more_seeds(seed):
    res, _ = run_fuzz(seed, 20000)
    check(res, 20000)
