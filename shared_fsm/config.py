# Every threshold and time the state machine and motion planner use, in one place, with units in
# the names and defaults from ../shared/HARDWARE.md. The board stores overrides in config.json;
# from_dict() validates them and names the offending field.
from .codes import CHECK_ALL
from .compat import const

# The one bound on attempts per job, everywhere: this table, Machine.start_job and the link's
# JOB field (shared_fsm/link.py K_TRIES). The retry spiral has an offset for every attempt up to it.
MAX_ATTEMPTS = const(9)

# (name, default, min, max, needs_reboot): the one table of these facts (the firmware's board
# settings have the same shape, firmware/settings.py BOARD_FIELDS; the host's settings list,
# the run record's checks and the engines read them here). Integers only: the board keeps them
# as small ints. needs_reboot: the loop's period is fixed when the board boots.
FIELDS = (
    # control loop and timing
    ("loop_period_ms", 4, 1, 50, 1),
    ("grasp_dwell_ms", 350, 0, 5000, 0),
    ("settle_ms", 250, 0, 5000, 0),
    ("release_wait_ms", 200, 0, 5000, 0),
    ("release_confirm_ms", 500, 10, 10000, 0),
    ("verify_window_ms", 100, 10, 5000, 0),
    ("grip_loss_ms", 60, 0, 5000, 0),
    ("move_timeout_ms", 8000, 100, 60000, 0),
    ("arrive_settle_ms", 150, 0, 5000, 0),
    # grasp verification
    ("debounce_ms", 6, 1, 100, 0),      # a level is a fact after this long of equal reads
    ("verify_enabled_mask", CHECK_ALL, 1, CHECK_ALL, 0),
    ("verify_required_mask", 3, 0, CHECK_ALL, 0),
    ("verify_min_agree", 3, 1, 4, 0),
    ("grip_monitor_mask", 11, 0, CHECK_ALL, 0),
    ("jaw_present_min_um", 1500, 100, 45000, 0),
    ("grip_slip_um", 1500, 100, 45000, 0),
    ("pot_closed_counts", 8000, 0, 65535, 0),
    ("pot_counts_per_mm", 1067, 10, 65535, 0),
    ("pot_valid_min_counts", 1000, 0, 65535, 0),
    ("pot_valid_max_counts", 64000, 0, 65535, 0),
    ("jaw_open_tolerance_um", 4000, 100, 45000, 0),
    ("current_grip_min_ma", 150, 0, 5000, 0),
    ("current_crush_ma", 600, 1, 5000, 0),
    ("current_hold_limit_ma", 400, 1, 5000, 0),
    ("hold_overcurrent_ms", 1500, 10, 60000, 0),
    # gripper commands. Openings: part + open_margin on the first attempt, retry_open_extra more
    # on each retry (25 mm part: 43, 44, 45 mm), so a retry really opens wider under 45 mm. The
    # first opening stays wide: it is what straddles an offset part (35 mm placed 15 of 20
    # part_offset cycles at 8 mm, 43 mm 20 of 20; docs/sweeps.md).
    ("squeeze_um", 6000, 0, 45000, 0),
    ("hold_squeeze_um", 2000, 0, 45000, 0),
    ("open_margin_um", 18000, 0, 45000, 0),
    ("retry_open_extra_um", 1000, 0, 45000, 0),
    ("jaw_max_um", 45000, 1000, 45000, 0),
    # retries
    ("max_attempts", 3, 1, MAX_ATTEMPTS, 0),
    ("spiral_step_um", 3000, 0, 20000, 0),
    # poses and motion
    ("approach_height_um", 60000, 5000, 200000, 0),
    # the lift's sink under the part, estimated from the servo rail at its end (Arm.lift_droop_um_per_a):
    # deeper than this is LIFT_SHORT (0: no check)
    ("lift_sink_max_um", 4000, 0, 200000, 0),
    ("arm_speed_mdeg_s", 90000, 1000, 600000, 0),
    ("arm_accel_mdeg_s2", 240000, 1000, 6000000, 0),
    ("gentle_speed_mdeg_s", 45000, 1000, 600000, 0),
    ("gentle_accel_mdeg_s2", 60000, 1000, 6000000, 0),
    ("jaw_speed_um_s", 80000, 1000, 500000, 0),
    ("line_step_um", 5000, 1000, 50000, 0),
    # finding the part with the gripper's own sensors (shared_fsm/search.py, docs/find-the-part.md):
    # resense 0 none, 1 on_retry (before each retry), 2 always (before every attempt)
    ("resense", 0, 0, 2, 0),
    ("search_limit_ms", 30000, 1000, 120000, 0),   # a search gives up after this long
    ("search_range_um", 30000, 5000, 60000, 0),    # how far from the taught pose it looks, each axis
    # the servo rail this far below its level before a probe: a finger came down on something
    ("search_touch_mv", 200, 20, 3000, 0),
    # a production run (firmware/production.py, docs/production-run.md): a part that fails its
    # attempts is skipped (0) or stops the run (1); the run stops after run_stop_in_row faulted
    # cycles in a row, or when more than run_rate_pct of the last run_rate_window cycles faulted;
    # a part not ready within run_ready_timeout_ms ends it
    ("run_on_fail", 0, 0, 1, 0),
    ("run_stop_in_row", 3, 1, 1000, 0),
    ("run_rate_window", 20, 1, 30, 0),
    ("run_rate_pct", 50, 1, 100, 0),
    ("run_ready_timeout_ms", 60000, 100, 3600000, 0),
)

# Fields whose values have names (the board keeps the number; the host takes either).
NAMED = {"resense": ("none", "on_retry", "always"), "run_on_fail": ("skip", "stop")}
RESENSE_NONE = const(0)
RESENSE_ON_RETRY = const(1)
RESENSE_ALWAYS = const(2)


class ConfigError(ValueError):
    # .other: the field a relation ties .field to (both are wrong together), or None
    def __init__(self, field, message, other=None):
        super().__init__("config field '%s': %s" % (field, message))
        self.field = field
        self.other = other


def value_of(field, value):
    # A field's value as a person writes it: an integer, or for a NAMED field its name (host
    # side: "resense=on_retry"). -> int, or ValueError naming the choices.
    names = NAMED.get(field)
    if names is not None and value in names:
        return names.index(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        if names is not None:
            raise ConfigError(field, "must be one of %s, got %r" % (", ".join(names), value))
        raise ConfigError(field, "must be an integer, got %r" % (value,))


def reads_in(ms, period_ms):
    # Loop ticks that span `ms` (at least one): times are configured in ms, so the behaviour
    # stays the same whatever loop_period_ms a board runs at.
    n = (ms + period_ms - 1) // period_ms
    return n if n > 0 else 1


class Config:
    def __init__(self, overrides=None):
        for f in FIELDS:
            setattr(self, f[0], f[1])
        self._derive()
        if overrides:
            self.update(overrides)

    def _derive(self):
        # Counts the hot loop compares against, from their times (never set directly).
        self.debounce_reads = reads_in(self.debounce_ms, self.loop_period_ms)

    def update(self, overrides):
        # Validate everything first so a bad dict changes nothing.
        checked = {}
        known = {}
        for f in FIELDS:
            known[f[0]] = f
        for key in overrides:
            if key not in known:
                raise ConfigError(key, "unknown field (known: %s)" % ", ".join(sorted(known)))
            f = known[key]
            value = overrides[key]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(key, "must be an integer, got %r" % (value,))
            if value < f[2] or value > f[3]:
                raise ConfigError(key, "%d outside %d..%d" % (value, f[2], f[3]))
            checked[key] = value
        merged = self.to_dict()
        merged.update(checked)
        _check_relations(merged)
        for key in checked:
            setattr(self, key, checked[key])
        self._derive()
        return self

    def to_dict(self):
        d = {}
        for f in FIELDS:
            d[f[0]] = getattr(self, f[0])
        return d


def _check_relations(d):
    if d["verify_required_mask"] & ~d["verify_enabled_mask"]:
        raise ConfigError("verify_required_mask", "requires a check that verify_enabled_mask disables",
                          "verify_enabled_mask")
    if d["grip_monitor_mask"] & ~d["verify_enabled_mask"]:
        raise ConfigError("grip_monitor_mask", "monitors a check that verify_enabled_mask disables",
                          "verify_enabled_mask")
    enabled = 0
    for i in range(4):
        if d["verify_enabled_mask"] & (1 << i):
            enabled += 1
    if d["verify_min_agree"] > enabled:
        raise ConfigError("verify_min_agree", "%d but only %d checks are enabled" % (d["verify_min_agree"], enabled),
                          "verify_enabled_mask")
    if d["pot_valid_min_counts"] >= d["pot_valid_max_counts"]:
        raise ConfigError("pot_valid_min_counts", "must be below pot_valid_max_counts", "pot_valid_max_counts")
    if d["debounce_ms"] > d["verify_window_ms"]:
        raise ConfigError("debounce_ms", "must be within verify_window_ms (the reads are taken inside it)",
                          "verify_window_ms")
    if d["current_crush_ma"] <= d["current_grip_min_ma"]:
        raise ConfigError("current_crush_ma", "must be above current_grip_min_ma", "current_grip_min_ma")


def state_bound_ms(cfg, state):
    # The longest a state may last before the machine faults; IDLE has none (returns 0).
    # Used by the machine's own watchdog and by the property tests.
    from .states import APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER, PLACE, RECOVER
    move = cfg.move_timeout_ms
    if state == APPROACH:
        # a search (resense) runs inside the approach: its limit, then its last probe's way up
        search = cfg.search_limit_ms + move if cfg.resense else 0
        return move + cfg.settle_ms + cfg.verify_window_ms + search
    if state in (DESCEND, TRANSFER):
        return move
    if state == LIFT:
        return 2 * move                   # the lift, and a short one's way back down (Machine._lift_short)
    if state == GRASP:
        return move + cfg.grasp_dwell_ms  # the jaw's close, then the dwell
    if state == VERIFY:
        return cfg.verify_window_ms
    if state == PLACE:
        return 2 * move + cfg.settle_ms + cfg.release_wait_ms + cfg.release_confirm_ms + cfg.verify_window_ms
    if state == RECOVER:
        return move + cfg.settle_ms
    return 0
