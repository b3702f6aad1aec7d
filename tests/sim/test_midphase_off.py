# The generated model runs without MuJoCo's midphase (sim/arm_model.py): a pure cost cut, so every
# scenario (with its trajectory) and every acceptance group (as a batch runs it), on the
# acceptance's first seed, must give the very cycle it gives with the midphase on (MuJoCo's
# default): the same reading at every tick, the same events, record and trajectory.
import mujoco
import pytest

from surepick.host.engines import acceptance, inproc
from surepick.sim import plant as plant_mod
from surepick.sim import scenarios
from tests.support.same_cycle import assert_same_cycle, run_logged


def _run(name, overrides, seed, midphase, trajectory, monkeypatch):
    real_init = plant_mod.Plant.__init__

    def init(self, *a, **kw):
        real_init(self, *a, **kw)
        if midphase:
            self.m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    with monkeypatch.context() as mp:
        mp.setattr(plant_mod.Plant, "__init__", init)
        run = inproc.InprocCycle(name, overrides, seed, 0,
                              sample_ms=inproc.SAMPLE_MS if trajectory else inproc.BATCH_SAMPLE_MS)
        assert bool(run.plant.m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_MIDPHASE) != midphase
        return run_logged(run, trajectory)


def _same(label, name, overrides, seed, trajectory, monkeypatch):
    ref = _run(name, overrides, seed, True, trajectory, monkeypatch)
    assert_same_cycle(ref, _run(name, overrides, seed, False, trajectory, monkeypatch), label)


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_every_scenario_is_the_same_cycle_without_the_midphase(name, monkeypatch):
    _same(name, name, None, acceptance.SEED0, True, monkeypatch)


@pytest.mark.parametrize("label", sorted(acceptance.GROUPS) + sorted(acceptance.REPORTED))
def test_every_acceptance_group_is_the_same_cycle_without_the_midphase(label, monkeypatch):
    name, overrides, _, _ = acceptance.GROUPS.get(label) or acceptance.REPORTED[label]
    seed = acceptance.YAWED_SEED0 if label in acceptance.REPORTED else acceptance.SEED0
    _same(label, name, overrides, seed, False, monkeypatch)
