# Open-loop grasp physics on the real MuJoCo plant: scripted straight-line moves (shared
# kinematics + servo calibration -> pulses), no state machine, no welds. What is asserted is what
# the state machine will rely on: a squeezed part is held by friction alone, and the four cheap
# sensors tell a held part from an empty jaw and from a crushed fixture.
import statistics

import pytest

from surepick.sim import plant as plant_mod
from surepick.sim.plant import Plant

from tests.support.plant_script import SQUEEZE_MM, Script, home_pose, pick, pulses_for

CUBE_MM = 25.0
LIFT_MM = 60.0
IDLE_MA = 10.0


def sensor_means(plant, n=50):
    # Average the noisy ADC channels over n control periods (100 ms) while nothing is commanded.
    pots, curs, sw, beam = [], [], [], []
    for _ in range(n):
        plant.advance(2)
        pots.append(plant.read_u16(0))
        curs.append(plant.read_u16(1))
        sw.append(plant.read_pin(14))
        beam.append(plant.read_pin(15))
    return statistics.mean(pots), statistics.mean(curs), sw, beam


def current_ma(counts, params):
    return (counts - params.current.offset_counts) * 1000.0 / params.current.counts_per_a


def pot_mm(counts, params):
    return (counts - params.pot.closed_counts) / params.pot.counts_per_mm


def lift_and_hold(plant, sc, hold_ms=1000):
    # Lift at 100 mm/s, settle, then watch the part against the jaw for hold_ms.
    t0 = plant.truth()
    sc.move(z=sc.pose[2] + LIFT_MM, speed_mm_s=100.0)
    sc.wait(200)
    t1 = plant.truth()
    sc.wait(hold_ms)
    t2 = plant.truth()
    return t0, t1, t2


@pytest.mark.parametrize("part", ["cube25_heavy", "cube25_slippery", "cylinder", "sphere"])
def test_squeezed_part_is_held_through_a_lift(part):
    # The two cubes are the hard cases: 100 g, and 100 g with friction 0.25.
    plant = Plant(part=part, seed=3)
    width_mm = plant.part["size_mm"][0]
    assert width_mm == pytest.approx(CUBE_MM, abs=1.0)
    sc = pick(plant, width_mm=width_mm)
    closed = plant.truth()
    assert closed["finger_contact"] and closed["support_contact"]
    t0, t1, t2 = lift_and_hold(plant, sc)
    # The part left its support and rose with the jaw (within 2 mm of the jaw's own rise).
    assert not t1["support_contact"] and t1["finger_contact"]
    part_rise = t1["part_pos_mm"][2] - t0["part_pos_mm"][2]
    jaw_rise = t1["jaw_centre_mm"][2] - t0["jaw_centre_mm"][2]
    assert jaw_rise > LIFT_MM - 8.0
    assert abs(part_rise - jaw_rise) < 2.0, (part_rise, jaw_rise)
    # No creep: part height relative to the jaw drifts less than 1 mm over the 1 s hold.
    rel1 = t1["part_pos_mm"][2] - t1["jaw_centre_mm"][2]
    rel2 = t2["part_pos_mm"][2] - t2["jaw_centre_mm"][2]
    assert abs(rel2 - rel1) < 1.0, (rel1, rel2)
    assert t2["part_speed_mps"] < 0.005
    assert t2["grip_force_n"] > 2.0


def test_sensors_tell_a_held_cube_from_an_empty_jaw():
    # Same script, same jaw command (25 - 6 = 19 mm): once on the cube, once on nothing.
    held = Plant(part="cube25_heavy", seed=1)
    sc = pick(held, width_mm=CUBE_MM)
    lift_and_hold(held, sc, hold_ms=200)
    pot_held, cur_held, sw_held, beam_held = sensor_means(held)

    empty = Plant(part=None, seed=1)
    pick(empty, width_mm=CUBE_MM)
    pot_empty, cur_empty, sw_empty, beam_empty = sensor_means(empty)

    p = held.params
    # Switch pressed (0) and beam broken (0) on every read while held; released/clear when empty.
    assert sw_held == [0] * len(sw_held) and beam_held == [0] * len(beam_held)
    assert sw_empty == [1] * len(sw_empty) and beam_empty == [1] * len(beam_empty)
    # The jaw stops more open on the part: by more than 1.5 mm (1600 counts, far above the noise).
    assert pot_mm(pot_empty, p) == pytest.approx(CUBE_MM - SQUEEZE_MM, abs=0.5)
    assert pot_mm(pot_held, p) - pot_mm(pot_empty, p) > 1.5
    assert pot_mm(pot_held, p) < CUBE_MM
    # Squeeze current: well above idle, well below stall; the empty jaw is back to idle.
    stall_ma = held.servos.ma_per_nm[4] * held.servos.stall_torque_nm(4) + IDLE_MA
    assert 5 * IDLE_MA < current_ma(cur_held, p) < 0.6 * stall_ma
    assert current_ma(cur_empty, p) < 2 * IDLE_MA
    # And the truth agrees: the pad really is pushed in, the beam really is crossed by the part.
    t = held.truth()
    assert t["pad_travel_mm"] > held.params.switch.trip_mm and t["beam_broken_physical"]


def test_closing_on_a_fixed_block_drives_the_gripper_to_stall():
    plant = Plant(part=None, obstacle=True, seed=2)
    ox, oy = plant_mod.OBSTACLE_XY_MM
    sc = Script(plant, home_pose(plant))
    sc.move(x=ox, y=oy, z=80.0, jaw=45.0)
    sc.move(z=25.0, speed_mm_s=60.0)
    sc.wait(200)
    sc.move(jaw=CUBE_MM - SQUEEZE_MM, jaw_speed_mm_s=40.0)  # expecting a cube, meets 40 mm
    sc.wait(400)
    _, cur, sw, _ = sensor_means(plant)
    stall_ma = plant.servos.ma_per_nm[4] * plant.servos.stall_torque_nm(4) + IDLE_MA
    assert current_ma(cur, plant.params) > 0.85 * stall_ma
    assert current_ma(cur, plant.params) > 600.0  # above the firmware's default crush threshold
    assert sw == [0] * len(sw)
    t = plant.truth()
    # The fingers stopped on the 40 mm block, nowhere near the commanded 19 mm.
    assert t["jaw_gap_mm"] == pytest.approx(plant_mod.OBSTACLE_SIZE_MM[0], abs=1.0)


def test_opening_over_the_bin_drops_the_cube_into_it():
    plant = Plant(part="cube25_heavy", seed=4)
    sc = pick(plant, width_mm=CUBE_MM)
    sc.move(z=sc.pose[2] + LIFT_MM, speed_mm_s=100.0)
    bx, by = plant_mod.BIN_XY_MM
    sc.move(x=bx, y=by, speed_mm_s=150.0)
    sc.wait(300)
    assert plant.truth()["finger_contact"], "still carrying the cube over the bin"
    sc.move(jaw=45.0)
    sc.wait(800)
    # Rests in the bin by itself for 1 s: inside, on the bin, not touched, speed < 0.02 m/s.
    for _ in range(10):
        sc.wait(100)
        t = plant.truth()
        assert t["in_bin"] and t["bin_contact"] and not t["finger_contact"]
        assert t["part_speed_mps"] < 0.02
    assert t["part_pos_mm"][2] < plant_mod.BIN_FLOOR_Z_MM + CUBE_MM  # down on the floor
    sc.move(z=sc.pose[2] + 10.0)
    sw = [plant.read_pin(14) for _ in range(3)]
    assert sw == [1, 1, 1]


def test_closing_on_nothing_after_a_move_reads_empty():
    plant = Plant(part=None, seed=5)
    sc = Script(plant, home_pose(plant))
    sc.move(x=150.0, y=40.0, z=60.0, jaw=45.0)
    sc.move(jaw=5.0, jaw_speed_mm_s=60.0)
    sc.move(x=170.0, y=-20.0, z=50.0)
    pot, cur, sw, beam = sensor_means(plant)
    assert sw == [1] * len(sw) and beam == [1] * len(beam)
    assert current_ma(cur, plant.params) < 2 * IDLE_MA
    assert pot_mm(pot, plant.params) == pytest.approx(5.0, abs=0.5)


def test_a_frictionless_part_slips_out_of_the_same_grasp():
    # The grasp is friction, not a weld: the same squeeze on an ice-like part loses it.
    ice = dict(shape="box", size_mm=(25.0, 25.0, 25.0), mass_g=100.0, friction=0.005)
    plant = Plant(part=ice, seed=6)
    sc = pick(plant, width_mm=CUBE_MM)
    t0, t1, t2 = lift_and_hold(plant, sc)
    assert t2["jaw_centre_mm"][2] - t0["jaw_centre_mm"][2] > LIFT_MM - 8.0
    assert t2["part_pos_mm"][2] - t0["part_pos_mm"][2] < 10.0  # left behind near the pad
    assert not t2["finger_contact"]


def sudden_close_trace(seed):
    # Jaw commanded straight to 19 mm in one pulse (no ramp) around the cube; 1 ms samples.
    plant = Plant(part="cube25", seed=seed)
    sc = pick(plant, close_jaw_mm=45.0)  # descend with the jaw open, no close yet
    pulses = list(plant.servos.pulses)
    pulses[4] = pulses_for(sc.pose[:4] + (CUBE_MM - SQUEEZE_MM,))[4]
    plant.set_pulses(pulses)
    pad, pot = [], []
    for _ in range(500):
        plant.advance(1)
        pad.append(plant.truth()["pad_travel_mm"])
        pot.append(plant.read_u16(0))
    return pad, pot


def test_a_sudden_close_rings_in_the_physics_and_settles():
    pad_a, pot_a = sudden_close_trace(seed=1)
    pad_b, _ = sudden_close_trace(seed=2)
    # Ringing is physics, not noise: the pad's motion does not depend on the seed.
    assert pad_a == pad_b
    final = statistics.mean(pad_a[-50:])
    assert max(pad_a) > final + 0.5  # overshoot on impact (servo inertia into the sprung pad)
    i_peak = pad_a.index(max(pad_a))
    assert min(pad_a[i_peak:i_peak + 150]) < final - 0.05  # swings back below the final value
    assert max(pad_a[-100:]) - min(pad_a[-100:]) < 0.1  # and has settled 400 ms later
    # The pot sees the same ringing: the servo shaft swings past its final angle.
    pot_final = statistics.mean(pot_a[-50:])
    assert min(pot_a[i_peak - 20:i_peak + 100]) < pot_final - 600
