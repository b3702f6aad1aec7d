# A sweep's plan: axis values parsed exactly (ranges include their stop), every value and every
# cell checked before any work with the bad one named, and cells turned into the settings a cycle
# runs with (scenario parameters, config, plant parameters, the part). No cycles run here.
from decimal import Decimal

import pytest

from surepick.host.engines import sweep
from surepick.host.engines.sweep import SweepError, make_plan, parse_values
from surepick.shared_fsm.config import Config
from surepick.sim import scenarios
from surepick.sim.params import PlantParams


def test_a_range_includes_its_stop_and_is_exact():
    assert parse_values("0:14:1") == [Decimal(i) for i in range(15)]
    tenths = parse_values("0:1:0.1")
    assert len(tenths) == 11 and tenths[3] == Decimal("0.3") and float(tenths[3]) == 0.3
    assert parse_values("0:10:3") == [0, 3, 6, 9]          # the steps do not land on 10
    assert parse_values("250, 350,450") == [250, 350, 450]
    assert parse_values("7.5") == [Decimal("7.5")]


@pytest.mark.parametrize("text,needle", [
    ("0:1:0", "step must be above 0"), ("2:1:1", "stop is below start"), ("a:1:1", "'a' in 'a:1:1' is not a number"),
    ("1,1", "repeats a value"), ("nan", "not a finite number"), ("0:1", "start:stop:step"),
    ("0:100000:1", "at most 1000 per axis"),
])
def test_bad_values_are_named(text, needle):
    with pytest.raises(SweepError, match=needle):
        parse_values(text)


def test_grid_cells_fixed_settings_and_what_a_cell_runs_with():
    plan = make_plan("part_offset", ["offset_mm=0:10:5", "yaw_deg=0", "config.grasp_dwell_ms=250,450",
                                     "plant.servos.gripper.speed_s_per_60deg_4v8=0.1,0.2", "plant.rail.source_mohm=400"],
                     config={"squeeze_um": 5000}, seeds=3, first_seed=7)
    assert [a.name for a in plan.axes] == ["offset_mm", "config.grasp_dwell_ms",
                                           "plant.servos.gripper.speed_s_per_60deg_4v8"]
    assert [a.name for a in plan.fixed] == ["yaw_deg", "plant.rail.source_mohm"]   # one value: a setting
    assert len(plan.cells) == 3 * 2 * 2 and plan.seed_list == [7, 8, 9]
    assert plan.cell_values(0) == {"offset_mm": 0.0, "config.grasp_dwell_ms": 250,
                                   "plant.servos.gripper.speed_s_per_60deg_4v8": 0.1}
    last = plan.settings(len(plan.cells) - 1)
    assert last["params"] == {"offset_mm": 10.0, "yaw_deg": 0.0}
    assert last["config"] == {"squeeze_um": 5000, "grasp_dwell_ms": 450}
    assert isinstance(last["config"]["grasp_dwell_ms"], int)
    # the plant dict lands where the plant reads it: the gripper is the fifth servo
    p = PlantParams.from_dict(last["plant"])
    assert p.servos[4].speed_s_per_60deg_4v8 == 0.2 and p.servos[0].speed_s_per_60deg_4v8 == 0.17
    assert p.rail.source_mohm == 400.0
    assert Config(last["config"]).grasp_dwell_ms == 450


def test_chunks_never_span_cells_and_skip_what_is_done():
    plan = make_plan("nominal", ["config.grasp_dwell_ms=300,400"], seeds=5, chunk=2)
    chunks = plan.chunks()
    assert [[(c, s) for c, s, _ in jobs] for _, jobs in chunks] == [
        [(0, 0), (0, 1)], [(0, 2), (0, 3)], [(0, 4)], [(1, 0), (1, 1)], [(1, 2), (1, 3)], [(1, 4)]]
    left = plan.chunks(skip={(0, 0), (0, 1), (0, 2), (1, 4)})
    assert [[(c, s) for c, s, _ in jobs] for _, jobs in left] == [[(0, 3), (0, 4)], [(1, 0), (1, 1)], [(1, 2), (1, 3)]]


@pytest.mark.parametrize("axes,needle", [
    (["offset_mm=0:30:5"], "axis offset_mm value 30: parameter 'offset_mm' = 30 is outside 0..25"),
    (["bogus=1,2"], "has no parameter 'bogus'"),
    (["config.grasp_dwell_ms=250.5,300"], "axis config.grasp_dwell_ms value 250.5: config field must be an integer"),
    (["config.grasp_dwell_ms=0:6000:3000"], "value 6000: config field 'grasp_dwell_ms': 6000 outside 0..5000"),
    (["config.no_such_ms=1"], "no config field 'no_such_ms'"),
    (["plant.rail.nope=1"], "no parameter 'nope' at rail"),
    (["plant.servos.thumb.band_deg=1"], "no servo 'thumb'"),
    (["plant.pad.friction=-1,1"], "axis plant.pad.friction value -1: must not be negative"),
    (["plant.servos.gripper.speed_s_per_60deg_4v8=0,0.1"], "value 0: must be above 0"),
    (["plant.servo_frame_ms=20.5"], "plant parameter must be an integer"),
    (["plant.home_deg=1"], "not a number that can be swept"),
    (["part.mass_g=0,20"], "axis part.mass_g value 0: must be above 0"),
    (["part.colour=1"], "the part's mass_g or friction"),
    (["wing.x=1"], "unknown kind 'wing'"),
    (["offset_mm=1", "offset_mm=2"], "given twice"),
    (["plant.pad.friction=1e400"], "axis plant.pad.friction value 1E+400: is too large"),
    (["offset_mm=0:20:0.05", "yaw_deg=0:45:0.1"], "the grid has 180851 cells (at most 100000)"),
])
def test_every_value_is_checked_before_any_work(axes, needle):
    with pytest.raises(SweepError) as e:
        make_plan("part_offset", axes, seeds=2)
    assert needle in str(e.value)


def test_combinations_are_checked_cell_by_cell():
    # each value is fine alone; grip 550 mA with crush 500 mA is not (crush must be above grip)
    with pytest.raises(SweepError) as e:
        make_plan("nominal", ["config.current_grip_min_ma=100,550", "config.current_crush_ma=500,900"])
    assert "cell config.current_grip_min_ma=550, config.current_crush_ma=500" in str(e.value)
    assert "must be above current_grip_min_ma" in str(e.value)


def test_part_axes_need_a_part_and_change_only_the_part():
    with pytest.raises(SweepError, match="scenario 'part_missing' has no part"):
        make_plan("part_missing", ["part.mass_g=20,50"])
    plan = make_plan("nominal", ["part.mass_g=20,60", "part.friction=0.4"])
    s = plan.settings(1)
    assert s["part"] == {"mass_g": 60.0, "friction": 0.4}
    setup = sweep.scenario_for(s).setup(scenarios.get("nominal").resolve(None), scenarios.rng_for(0, 0))
    assert setup["part"] == "cube25"                   # the pick pose still comes from the named part
    assert setup["part_spec"]["mass_g"] == 60.0 and setup["part_spec"]["friction"] == 0.4
    assert setup["part_spec"]["size_mm"] == (25.0, 25.0, 25.0)


def test_a_plan_round_trips_and_says_how_another_differs():
    plan = make_plan("part_offset", ["offset_mm=0:4:2", "config.squeeze_um=4000,6000"], seeds=4, chunk=3)
    again = sweep.Plan.from_dict(plan.to_dict())
    assert again.differs_from(plan) is None and again.fingerprint() == plan.fingerprint()
    assert again.cells == plan.cells and again.chunk == 3
    other = make_plan("part_offset", ["offset_mm=0:6:2", "config.squeeze_um=4000,6000"], seeds=4)
    assert other.differs_from(plan).startswith("axes:")
    assert make_plan("part_offset", ["offset_mm=0:4:2", "config.squeeze_um=4000,6000"], seeds=5).differs_from(plan) \
        == "seeds: 5 here, 4 in the stored plan"
