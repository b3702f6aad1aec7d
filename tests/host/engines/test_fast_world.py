# The in-process engine's fast path (sim/fast_world.py) against today's World, Plant and Judge
# (sim/world.py, kept as the reference): every scenario and every acceptance group, on the
# acceptance's own seeds, must give the same readings at every tick, the same events, the same
# verdict and judge figures, and (with a trajectory) the same tick rows and trajectory rows.
import pytest

from surepick.host.engines import acceptance, inproc
from surepick.sim import scenarios

# What may differ between two runs of one cycle: the host's CPU time.
_HOST_TIME = ("wall_s", "loop")


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
    readings = []
    read = run.world.read_inputs

    def logged():
        r = read()
        readings.append((run.plant.now_ms, r))
        return r
    run.world.read_inputs = logged        # what the board's pins see, every tick
    rec = run.run(record_trajectory=trajectory)
    return {k: v for k, v in rec.items() if k not in _HOST_TIME}, readings, run.trajectory


def _same(label, name, overrides, seed, trajectory):
    ref, ref_reads, ref_traj = _run(name, overrides, seed, True, trajectory)
    new, new_reads, new_traj = _run(name, overrides, seed, False, trajectory)
    assert len(new_reads) == len(ref_reads) > 100, label
    for a, b in zip(ref_reads, new_reads):
        assert a == b, (label, seed, a, b)
    assert new["events"] == ref["events"], (label, seed)
    assert new == ref, (label, seed)
    assert new_traj == ref_traj, (label, seed)
    return ref


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
