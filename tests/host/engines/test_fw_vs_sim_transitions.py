# The firmware on the virtual board against the in-process engine, same scenario and seed: the
# firmware's transitions (EVENT frames over the console) must be the in-process engine's (same
# states, reasons and attempts; times within two loop periods). Both run the same controller
# (firmware/controller.py) on the same world (sim/world.py), calibrate the current offset in the
# same tick (sim.world.CAL_AT_MS) and start the job at the tick the firmware read it, so in
# practice every field matches.
import pytest

from tests.support.vboard import run_scenario
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.shared_fsm.config import Config
from surepick.host.engines import inproc as runner
from surepick.sim import scenarios

from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

PERIOD_MS = Config().loop_period_ms
QUICK_SEEDS = range(1, 6)
SLOW_SEEDS = range(6, 26)


def sim_events(scenario, seed, job_event_ms):
    # The in-process cycle, its job started so that its first step falls in the tick where the
    # firmware's first transition happened (the firmware read the JOB in the tick before).
    sc = scenarios.get(scenario)
    run = runner.InprocCycle(sc, sc.resolve(None), seed, 0)
    while run.board.now < job_event_ms:
        run.board.step()
    rec = run.run(record_trajectory=False)
    return [list(e) for e in run.events], rec


def label(e):
    return "%s %s>%s %s #%d" % (codes.KIND_NAMES[e[2]], states.name(e[3]), states.name(e[4]),
                                codes.name(e[5]), e[6])


def check_same(scenario, seed, tmp_path):
    fw, ps, _, wall, _ = run_scenario(tmp_path / "flash", scenario, seed)
    sim, rec = sim_events(scenario, seed, fw[0][1])
    assert [label(e) for e in fw] == [label(e) for e in sim], (fw, sim)
    worst = max(abs(a[1] - b[1]) for a, b in zip(fw, sim))
    assert worst <= 2 * PERIOD_MS, [(a[1], b[1]) for a, b in zip(fw, sim)]
    exact = all(a[1:] == b[1:] for a, b in zip(fw, sim))   # seq aside: times and readings too
    assert ps.verdict()[0] == rec["judge_outcome"]
    print("\n%s seed %d: %d transitions, worst dt %d ms, every field equal: %s, judge %s, %.1f s wall"
          % (scenario, seed, len(fw), worst, exact, rec["judge_outcome"], wall))


@pytest.mark.parametrize("seed", QUICK_SEEDS)
@pytest.mark.parametrize("scenario", ["nominal", "part_offset"])
def test_firmware_transitions_equal_the_simulators(scenario, seed, tmp_path):
    check_same(scenario, seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("scenario", ["nominal", "part_offset"])
def test_firmware_transitions_equal_the_simulators_many_seeds(scenario, seed, tmp_path):
    check_same(scenario, seed, tmp_path)
