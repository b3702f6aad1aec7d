# `surepick doctor` against the real firmware on the virtual board, through the installed CLI:
# a fresh flash (MicroPython, no firmware), a deployed board (every line OK, a changed setting
# named), a faulted board (names the command that clears it, which works), a board stopped at the
# REPL (says how to restart it). Exit 0 only when nothing failed.

import pytest

from tests.support.bench import Bench
from tests.support.doctor import findings
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


def test_doctor_on_a_fresh_flash_says_deploy(tmp_path):
    b = Bench(tmp_path, scenario=None, firmware=False)
    try:
        r = b.run("doctor", "--port", b.port, timeout=90)
    finally:
        b.close()
    assert r.returncode == 1, r.stdout + r.stderr
    got = findings(r.stdout)
    assert got["link"][0] == "OK"
    assert got["firmware"][0] == "FAIL" and "not deployed" in got["firmware"][1], r.stdout
    assert got["firmware"][2] == "`surepick deploy --port %s`" % b.port
    assert got["flash"][0] == "OK" and "KB of flash free" in got["flash"][1]
    assert "running" not in got            # nothing to run: one line says it, not two


@pytest.mark.slow
def test_doctor_on_a_deployed_then_faulted_then_stopped_board(tmp_path):
    # At the arm's true pace: nine attempts at a missing part outlast the CLI's start-up on any
    # machine, so the abort finds the job running (as fast as the host can, they may not).
    b = Bench(tmp_path, scenario="part_missing", realtime=True)
    p = b.port
    try:
        b.wait_firmware()
        d = b.run("deploy", "--port", p, "--quiet", timeout=180)
        assert d.returncode == 0, d.stdout + d.stderr
        assert b.run("config", "set", "grasp_dwell_ms", "380", "--port", p).returncode == 0

        r = b.run("doctor", "--port", p, timeout=120)
        got = findings(r.stdout)
        assert r.returncode == 0, r.stdout + r.stderr
        assert {t: v[0] for t, v in got.items()} == {t: "OK" for t in ("link", "running", "fault", "config", "log",
                                                                         "wiring", "firmware", "flash")}, r.stdout
        assert "grasp_dwell_ms = 380 (default 350)" in got["config"][1]
        assert "identical to what this host would deploy" in got["firmware"][1]
        assert r.stdout.rstrip().endswith("healthy: 0 failed, 0 warnings")

        # A latched fault: doctor names the exact command, and the command clears it.
        assert b.run("job", "start", "--port", p, "--attempts", "9").returncode == 0
        assert b.run("job", "abort", "--port", p).returncode == 0
        r = b.run("doctor", "--port", p, "--no-repl", timeout=120)
        got = findings(r.stdout)
        assert r.returncode == 1 and got["fault"][0] == "FAIL" and "ABORTED is latched" in got["fault"][1], r.stdout
        assert got["fault"][2] == "`surepick job clear --port %s`" % p
        fix = got["fault"][2].strip("`").split()
        c = b.run(*fix[1:])
        assert c.returncode == 0, c.stderr

        # Stopped at the REPL (what any mpremote command leaves): doctor says how to restart it.
        m = b.run("link", "mpremote", "--port", p, "--", "exec", "x = 1", timeout=60)
        assert m.returncode == 0, m.stderr
        r = b.run("doctor", "--port", p, timeout=120)
        got = findings(r.stdout)
        assert r.returncode == 1, r.stdout
        assert got["running"][0] == "FAIL" and "stopped at the REPL" in got["running"][1], r.stdout
        assert "Ctrl-D" in got["running"][2] and "surepick deploy --port %s" % p in got["running"][2]
        assert got["firmware"][0] == "OK"         # still the deployed firmware, only stopped
        assert "grasp_dwell_ms" in got["config"][1]
        # ... and doctor left it stopped, as it found it
        assert b.run("job", "status", "--port", p).returncode == 1
    finally:
        b.close()
