# `surepick replay`: a host sim run reproduces itself; a tampered sensor column diverges where it should.
import subprocess

import pytest

from surepick.host.records import replay
from surepick.host.records import runrecord
from tests.support.broken_switch import break_switch_at_grasp
from tests.support.cli import SUREPICK_BIN

SUREPICK = [SUREPICK_BIN]


def _sim(out, scenario, seed=1):
    r = subprocess.run(SUREPICK + ["sim", "run", "--scenario", scenario, "--seed", str(seed), "--out", str(out),
                                   "--no-plots"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return out


@pytest.mark.parametrize("scenario", ["nominal", "part_missing", "brownout_mid_lift", "switch_stuck_closed"])
def test_a_host_sim_run_replays_exactly(tmp_path, scenario):
    d = _sim(tmp_path / scenario, scenario)
    res = replay.replay(runrecord.load(str(d)))
    assert all(r.identical() for r in res)
    assert [e[1:] for e in res[0].events] == [e[1:] for e in res[0].recorded]
    r = subprocess.run(SUREPICK + ["replay", str(d)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "reproduced exactly" in r.stdout and "!!" not in r.stdout


def test_a_tampered_switch_column_diverges_at_the_verify_decision(tmp_path):
    d = _sim(tmp_path / "nominal", "nominal", seed=4)
    verify_t = break_switch_at_grasp(d)
    res = replay.replay(runrecord.load(str(d)))[0]
    assert not res.identical()
    assert res.first_divergence_ms == verify_t
    r = subprocess.run(SUREPICK + ["replay", str(d)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "DIVERGES first at t=%d ms" % verify_t in r.stdout
    assert "VERIFY>RECOVER VERIFY_DISAGREE" in r.stdout and "replay only" in r.stdout


def test_a_cycle_the_record_lacks_is_refused_before_any_replay(tmp_path):
    d = _sim(tmp_path / "nominal", "nominal", seed=2)
    r = subprocess.run(SUREPICK + ["replay", str(d), "--cycle", "0", "--cycle", "7"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "surepick replay: %s has no cycle 7 (cycles: 0)\n" % d
