# The in-process engine's fast path (sim/fast_world.py) against today's World, Plant and Judge
# (sim/world.py, kept as the reference): every scenario and every acceptance group, on the
# acceptance's own seeds, must give the same readings at every tick, the same events, the same
# verdict and judge figures, and (with a trajectory) the same tick rows and trajectory rows.
import pytest

from surepick.host.engines import acceptance, inproc
from surepick.sim import scenarios
from tests.support.same_cycle import assert_same_cycle, run_logged


def _cases(seeds_per_group):
    cases = []
    for label, (name, overrides, _, _) in list(acceptance.GROUPS.items()) + list(acceptance.REPORTED.items()):
        seed0 = acceptance.YAWED_SEED0 if label in acceptance.REPORTED else acceptance.SEED0
        cases += [(label, name, overrides, seed0 + k) for k in range(seeds_per_group)]
    covered = {name for _, name, _, _ in cases}
    cases += [(name, name, None, acceptance.SEED0) for name in sorted(scenarios.SCENARIOS) if name not in covered]
    return cases


def _run(name, overrides, seed, reference, trajectory):
    run = inproc.InprocCycle(name, overrides, seed, 0, reference=reference,
                          sample_ms=inproc.SAMPLE_MS if trajectory else inproc.BATCH_SAMPLE_MS)
    return run_logged(run, trajectory)


def _same(label, name, overrides, seed, trajectory):
    # -> the reference run's record
    ref = _run(name, overrides, seed, True, trajectory)
    assert_same_cycle(ref, _run(name, overrides, seed, False, trajectory), (label, seed))
    return ref[0]


@pytest.mark.parametrize("label,name,overrides,seed", _cases(1), ids=lambda v: v if isinstance(v, str) else None)
def test_fast_path_matches_the_reference_in_a_batch(label, name, overrides, seed):
    rec = _same(label, name, overrides, seed, trajectory=False)
    assert rec["sim_ms"] > 1000


@pytest.mark.parametrize("name", ["nominal", "brownout_mid_lift", "estop", "knocked_over", "part_late"])
def test_fast_path_matches_the_reference_with_a_trajectory(name):
    rec = _same(name, name, None, acceptance.SEED0, trajectory=True)
    assert rec["_ticks"] and rec["_events"]


@pytest.mark.slow
@pytest.mark.parametrize("label,name,overrides,seed", [c for c in _cases(10) if c not in _cases(1)],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_fast_path_matches_the_reference_on_more_acceptance_seeds(label, name, overrides, seed):
    _same(label, name, overrides, seed, trajectory=False)
