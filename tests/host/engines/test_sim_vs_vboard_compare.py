# Host simulator vs the firmware on the virtual board, same scenario and seed, both as run
# records: identical state sequences (every event), `compare` passes. In practice the two
# records are equal tick for tick: the same driver code reads the same plant, the requests are
# handled in the same ticks and the run ends at the same plant time.
import time

import pytest

from surepick.host.records import compare
from surepick.host.records import runrecord
from surepick.host.engines import vboard as vboard_run
from surepick.host.records import report
from surepick.host.engines import inproc as runner
from surepick.sim import scenarios

from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

QUICK_SEEDS = (1, 2)
SLOW_SEEDS = range(1, 21)


def host_sim_record(out, scenario, seed, plant_params=None):
    sc = scenarios.get(scenario)
    values = sc.resolve(None)
    run = runner.InprocCycle(sc, values, seed, 0, plant_params)
    rec = run.run(record_trajectory=True)
    rec["scenario"] = sc.name
    meta = {"scenario": sc.name, "params": values, "seed": seed, "cycles_requested": 1,
            "model_hash": run.plant.model_hash(), "config_overrides": {}, "plant_params": plant_params}
    report.write_report(str(out), meta, [rec], None, plots=False)
    return runrecord.load(str(out))


def check(scenario, seed, tmp_path):
    t0 = time.perf_counter()
    a = host_sim_record(tmp_path / "sim", scenario, seed)
    t1 = time.perf_counter()
    runrecord.write(str(tmp_path / "vboard"), *vboard_run.run(scenario, seed, 1, workdir=tmp_path))
    b = runrecord.load(str(tmp_path / "vboard"))
    t2 = time.perf_counter()
    assert a.meta["kind"] == "host-sim" and b.meta["kind"] == "virtual-board"
    seq = lambda r: [runrecord.event_text(e) + " #%d" % e[6] for e in r.events[0]]
    assert seq(a) == seq(b)
    assert [e[1:] for e in a.events[0]] == [e[1:] for e in b.events[0]]     # times and readings too
    cmp = compare.compare(a, b)
    assert cmp.passed, [c.as_dict() for c in cmp.checks if not c.ok]
    # every column alike but loop_us: the host simulator measures no period (-1); the virtual
    # board's is its own virtual clock's, exactly one period after its first tick
    lu = runrecord.TICK_INDEX["loop_us"]
    same_ticks = a.ticks.shape == b.ticks.shape and bool((a.ticks[:, :lu] == b.ticks[:, :lu]).all())
    assert same_ticks
    assert (a.ticks[:, lu] == -1).all() and b.ticks[0, lu] == -1
    assert (b.ticks[1:, lu] == a.meta["loop_period_ms"] * 1000).all()
    assert a.cycles[0]["judge_outcome"] == b.cycles[0]["judge_outcome"]
    print("\n%s seed %d: %d events, %d ticks equal, compare %d checks pass; sim %.1f s, vboard %.1f s"
          % (scenario, seed, len(a.events[0]), len(a.ticks), len(cmp.checks), t1 - t0, t2 - t1))


@pytest.mark.parametrize("seed", QUICK_SEEDS)
@pytest.mark.parametrize("scenario", ["nominal", "part_offset"])
def test_host_sim_and_virtual_board_records_agree(scenario, seed, tmp_path):
    check(scenario, seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("scenario", ["nominal", "part_offset"])
def test_host_sim_and_virtual_board_records_agree_on_20_seeds(scenario, seed, tmp_path):
    check(scenario, seed, tmp_path)


def test_a_host_that_looks_late_records_the_same_run(tmp_path):
    # Where the run ends is a point of virtual time (the plant holds JUDGE_TAIL_MS after the
    # machine came back to IDLE), not where the host happened to look: a host that sleeps each
    # time it reports progress (a loaded machine; the board runs the whole cycle meanwhile)
    # records the same ticks as one that looks at once.
    def slow(cycle, now_ms, state):
        time.sleep(1.0)
    runrecord.write(str(tmp_path / "quick"), *vboard_run.run("nominal", 4, 1, workdir=tmp_path / "wq"))
    runrecord.write(str(tmp_path / "late"), *vboard_run.run("nominal", 4, 1, workdir=tmp_path / "wl",
                                                             on_progress=slow))
    a, b = runrecord.load(str(tmp_path / "quick")), runrecord.load(str(tmp_path / "late"))
    assert a.events == b.events
    assert a.ticks.shape == b.ticks.shape and (a.ticks == b.ticks).all()
