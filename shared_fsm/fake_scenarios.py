# Named fake-HAL scenarios and a runner that returns the machine's event trace. The same file
# runs under CPython (pytest) and under the `micropython` binary (tests/mpy/run_fsm_scenarios.py),
# and the two traces must be identical.
from .config import Config
from .machine import Machine, Job
from .fake_hal import FakeHal
from .ticks import ticks_add

# (name, fake HAL options, config overrides, what the machine should end with)
SCENARIOS = (
    ("nominal", {}, {}, "placed"),
    ("clean_switch", {"bounce_ms": 0, "ring_ms": 0}, {}, "placed"),
    ("bounce_and_ring", {"bounce_ms": 20, "ring_ms": 600, "ring_period_ms": 10}, {}, "placed"),
    ("slow_arrival", {"slow_move": 1, "slow_arrive_ms": 5000}, {}, "placed"),
    ("never_arrives", {"never_arrive_move": 2}, {}, "MOTION_TIMEOUT"),
    ("part_missing", {"part": 0}, {}, "GRASP_FAILED"),
    ("part_offset_retry", {"part_x_um": 157800, "part_y_um": -58000, "capture_um": 1500}, {}, "placed"),
    ("part_late", {"part": 1, "part_appears_ms": 2000, "capture_um": 8000}, {}, "placed"),
    ("lands_on_part", {"touch_move": 2, "touch_after_ms": 150}, {}, "placed"),
    ("slip_in_transfer", {"slip_after_ms": 450}, {}, "DROPPED"),
    ("flicker_in_transfer", {"flicker_after_ms": 600, "flicker_ms": 20}, {}, "placed"),
    ("switch_stuck_open", {"switch_stuck": 0}, {}, "SENSOR_DISAGREE"),
    ("switch_stuck_closed", {"switch_stuck": 1}, {}, "SENSOR_DISAGREE"),
    ("beam_blocked", {"beam_blocked": 1}, {}, "SENSOR_DISAGREE"),
    ("pot_broken", {"pot_broken": 1}, {}, "SENSOR_FAULT"),
    ("wide_rigid_part", {"part_width_um": 40000}, {}, "CRUSH"),
    ("estop_mid_lift", {"estop_at_ms": 1400}, {}, "ESTOP"),
    ("hold_overcurrent", {}, {"current_hold_limit_ma": 150, "hold_overcurrent_ms": 300}, "HOLD_OVERCURRENT"),
    ("part_sticks_to_finger", {"sticky": 1}, {}, "RELEASE_FAILED"),
)

PICK = (160000, -60000, 12500, -90000)
PLACE = (150000, 80000, 20000, -90000)


def names():
    return [s[0] for s in SCENARIOS]


def find(name):
    for s in SCENARIOS:
        if s[0] == name:
            return s
    raise ValueError("unknown fake scenario '%s' (known: %s)" % (name, ", ".join(names())))


def run(name, start_ms=0, period_ms=None, limit_ms=60000, cfg=None):
    # Runs one job until the machine is idle again, a step every period_ms (the config's loop
    # period by default); returns (events, machine, hal).
    spec = find(name)
    if cfg is None:
        cfg = Config(spec[2])
    if period_ms is None:
        period_ms = cfg.loop_period_ms
    m = Machine(cfg)
    hal = FakeHal(cfg, spec[1])
    err = m.start_job(Job(PICK, PLACE, 25000))
    if err:
        raise ValueError("job refused: %d" % err)
    events = []
    last = 0
    now = start_ms
    t = 0
    while t < limit_ms:
        hal.sense(now, m.inp)
        m.step(now)
        hal.actuate(now, m.out)
        while last < m.events.last_seq():
            last += 1
            events.append(m.events.get(last))
        if t > 0 and not m.busy():
            break
        now = ticks_add(now, period_ms)
        t += period_ms
    return events, m, hal


def outcome_text(m):
    from .codes import name as code_name
    if m.fault:
        return code_name(m.fault)
    if m.outcome:
        return "placed" if code_name(m.outcome) == "PLACED" else code_name(m.outcome)
    return "none"
