# The part search (shared_fsm/search.py) on the machine, against a geometric oracle of the
# gripper and a square part (tests/mpy/search_bench.py): where the part really is decides what
# each probe meets; the search's own frame, cells and discs are not used to judge it.
import math
import random

import pytest

from surepick.shared_fsm import codes, kinematics
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import (Job, Machine, MOVE_BACK, MOVE_FREE, MOVE_LINE, MOVE_PLAN)
from surepick.shared_fsm import search as search_mod
from tests.support import mpy as mpy_helpers

mpy_helpers.use_vectors()
import search_bench as sb  # noqa: E402  (tests/mpy, importable on CPython through use_vectors)

PICK = (160000, -60000, 15500, -90000)
PLACE = (150000, 80000, 20500, -90000)


def _machine(**cfg):
    c = {"resense": 2}
    c.update(cfg)
    m = Machine(Config(c))
    assert m.start_job(Job(PICK, PLACE, 25000)) == 0
    return m


def _frame(dr, dc):
    # the pick pose moved dr mm away from the base and dc mm across the jaws
    x, y = PICK[0] / 1000.0, PICK[1] / 1000.0
    n = math.hypot(x, y)
    return x + dr * x / n - dc * y / n, y + dr * y / n + dc * x / n


def _searched(part, **kw):
    m = _machine(**{k: v for k, v in kw.items() if k != "bench"})
    bench = sb.Bench(m, part, **kw.get("bench", {}))
    ticks, events = sb.run_search(m, bench)
    return m, bench, events


def _reasons(events):
    return [codes.name(e[5]) for e in events if e[2] == codes.K_SEARCH]


def test_it_finds_parts_off_their_taught_pose_and_hands_the_grasp_a_clear_corridor():
    # Parts up to 20 mm off on each axis and turned up to 30 degrees, reachable ones (the arm
    # cannot reach much beyond 200 mm from its base at the probes' heights): every one found,
    # the grasp's corridor at the pose found free of the part's edges and across it, the pose
    # within 9 mm of the part's centre along the arm (the search's own stopping spread: 18 mm).
    rng = random.Random(26)
    found = 0
    for _ in range(40):
        x, y = PICK[0] / 1000.0 + rng.uniform(-20, 20), PICK[1] / 1000.0 + rng.uniform(-20, 20)
        yaw = math.degrees(math.atan2(y, x)) + rng.uniform(-30, 30)
        m, bench, events = _searched((x, y, yaw))
        r = _reasons(events)
        assert r[0] == "SEARCH" and r[-1] in ("FOUND", "NOT_FOUND", "SEARCH_TIMEOUT"), r
        assert r[-1] == "FOUND", (x, y, yaw, r)
        found += 1
        gx, gy = m.gx / 1000.0, m.gy / 1000.0
        assert bench.grasp_clear(gx, gy), (x, y, yaw, gx, gy)
        ux, uy = x / math.hypot(x, y), y / math.hypot(x, y)
        assert abs((gx - x) * ux + (gy - y) * uy) <= 9.0, (x, y, yaw, gx, gy)
        assert m.gz == PICK[2]
    assert found == 40


def test_every_move_is_planned_at_rest_reachable_and_above_the_table():
    m, bench, events = _searched(_frame(14, 16) + (math.degrees(math.atan2(-60, 160)) + 12,))
    assert _reasons(events)[-1] == "FOUND"
    plan = None
    planned = []
    for kind, x, y, z in bench.moves:
        if kind == MOVE_PLAN:
            plan = True
            continue
        if kind == MOVE_BACK:
            continue                      # back along the path it came: no new pose
        # a probe's moves come right after the MOVE_PLAN that named them
        assert plan, (kind, x, y, z)
        planned.append((x, y, z))
        kinematics.inverse(x, y, z, -90.0)          # raises when out of reach
        assert z - sb.TIP_MM >= 2.0, z               # finger tips above the table
    assert len(planned) >= 4
    # what the controller plans for a MOVE_PLAN is exactly what comes next: here, the attempt
    ahead = m.resense.moves_ahead(m) if m.resense.phase != 0 else None
    assert ahead is None                            # the search is over; its last plan was the attempt's


def test_moves_ahead_names_the_moves_that_follow_each_plan():
    m = _machine()
    bench = sb.Bench(m, _frame(10, -8) + (-20.0,))
    now = 0
    named = None
    checked = 0
    for _ in range(20000):
        bench.sense(now)
        m.step(now)
        out = m.out
        if out.move_kind == MOVE_PLAN and out.move_seq != bench.seq:
            named = [(mv[1], mv[3], mv[4], mv[5]) for mv in m.resense.moves_ahead(m)]
            expect = 0
        elif named is not None and out.move_seq != bench.seq and out.move_kind != MOVE_BACK:
            mine = (out.move_kind, out.x_um, out.y_um, out.z_um)
            if expect < len(named) and out.move_kind in (MOVE_FREE, MOVE_LINE):
                assert mine == named[expect], (mine, named)
                expect += 1
                checked += 1
        bench.act(now)
        now += 4
        if m.state != 1 or (m.phase != 6 and now > 8):
            break
    assert checked >= 4


def test_a_missing_part_is_not_found_and_the_attempt_goes_where_it_would_have():
    m, bench, events = _searched(None)
    r = _reasons(events)
    assert r[-1] == "NOT_FOUND" and not any(x == "FOUND" for x in r)
    assert r.count("PROBE_CLEAR") >= 3 and "PROBE_SEEN" not in r
    assert (m.gx, m.gy, m.gz) == PICK[:3]           # the pick pose (attempt 1: no spiral offset)
    assert m.hz == m.cfg.approach_height_um


def test_the_time_limit_ends_a_search():
    # With no part the search would go on to MAX_PROBES probes; the limit stops it after the
    # probe under way when the limit passes.
    m, bench, events = _searched(None, search_limit_ms=1000)
    s = [e for e in events if e[2] == codes.K_SEARCH]
    r = _reasons(events)
    assert r[-1] == "SEARCH_TIMEOUT" and 1 <= r.count("PROBE_CLEAR") < search_mod.MAX_PROBES
    probes = [e[1] for e in s if e[5] == codes.R_PROBE_CLEAR]
    assert probes[-1] - s[0][1] >= 1000 > probes[-2] - s[0][1] if len(probes) > 1 else probes[-1] - s[0][1] >= 1000
    assert s[-1][1] == probes[-1]


def test_a_finger_that_comes_down_on_the_part_backs_off_at_once():
    # The part 22 mm across the jaws from where the first probe goes: a finger lands on it.
    m, bench, events = _searched(_frame(0, 22) + (math.degrees(math.atan2(-60, 160)),))
    r = _reasons(events)
    assert r[1] == "PROBE_TOUCHED" and r[-1] == "FOUND"
    # the MOVE_BACK came within the debounce of the sag: the arm never pushed on longer
    assert bench.touches >= 1


def test_a_broken_beam_above_the_part_stops_the_search_and_the_machine_says_why():
    m = _machine()
    bench = sb.Bench(m, _frame(0, 0) + (-20.0,), beam_stuck=True)
    now = 0
    while now < 30000 and not m.fault:
        bench.sense(now)
        m.step(now)
        bench.act(now)
        now += 4
    r = _reasons(m.events.since(0))
    assert r[-1] == "SEARCH_OFF"
    off = [e for e in m.events.since(0) if e[2] == codes.K_SEARCH and e[5] == codes.R_SEARCH_OFF][0]
    assert off[11] == search_mod.OFF_SENSORS
    assert m.fault == codes.F_SENSOR_DISAGREE          # the pre-grasp check above the pick pose


def test_no_search_for_a_tilted_tool():
    m = Machine(Config({"resense": 2}))
    assert m.start_job(Job((160000, -60000, 30000, -60000), PLACE, 25000)) == 0
    bench = sb.Bench(m, None)
    bench.sense(0)
    m.step(0)
    r = [e for e in m.events.since(0) if e[2] == codes.K_SEARCH]
    assert [codes.name(e[5]) for e in r] == ["SEARCH_OFF"] and r[0][11] == search_mod.OFF_PITCH
    assert m.phase != 6 and m.out.move_kind == MOVE_FREE   # the approach goes on as without one


def test_on_retry_waits_for_a_retry_and_none_installs_nothing():
    m = Machine(Config({"resense": 1}))
    assert m.resense is not None and not m.resense.first
    assert Machine(Config()).resense is None
    m = Machine(Config({"resense": 2}))
    m.cfg.update({"resense": 0})
    m.reconfigure()
    assert m.resense is None


def test_the_approach_bound_covers_the_search():
    from surepick.shared_fsm.config import state_bound_ms
    from surepick.shared_fsm.states import APPROACH
    off, on = Config(), Config({"resense": 1, "search_limit_ms": 20000})
    assert state_bound_ms(on, APPROACH) == state_bound_ms(off, APPROACH) + 20000 + on.move_timeout_ms


@pytest.mark.parametrize("value, expected", [("none", 0), ("on_retry", 1), ("always", 2), ("2", 2), (1, 1)])
def test_resense_takes_its_names(value, expected):
    from surepick.shared_fsm.config import value_of
    assert value_of("resense", value) == expected


def test_a_resense_name_it_does_not_know_is_named():
    from surepick.shared_fsm.config import ConfigError, value_of
    with pytest.raises(ConfigError, match="resense.*none, on_retry, always"):
        value_of("resense", "sometimes")
