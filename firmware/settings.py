# The board's one config file, /config.json: the sensor pin map and the firmware's own settings
# ("board") plus overrides of the shared machine's Config ("machine"). Defaults come from
# ../shared/HARDWARE.md and docs/conventions.md; every value is validated on load and on set.
# Whatever the file holds the board boots: load() keeps every value it can use, replaces each
# bad one by its default, and names each one it rejected (settings.rejected, sent over the link).
#
#   {"version": 1, "board": {"telemetry_hz": 10, "pin_estop": 13, ...}, "machine": {"grasp_dwell_ms": 350}}
#
# Only keys that differ from the defaults are written. The loop rate is the shared Config's
# loop_period_ms (one truth for the machine and the loop).
import json

from . import fsutil                          # host: surepick.firmware (the simulator)
from .rejects import Rejects
from ..shared_fsm.config import Config, FIELDS as MACHINE_FIELDS, reads_in

PATH = "/config.json"
VERSION = 1
MAX_FILE_BYTES = 8192    # every field set to a non-default value takes about 3 KB

# (name, default, min, max, needs_reboot), the shape of the machine's table (shared_fsm/config.py
# FIELDS). Integers only.
BOARD_FIELDS = (
    ("telemetry_hz", 10, 0, 50, 0),          # 0 = no telemetry
    # Watchdog: a hang of the loop resets the board within this (it is fed only after a tick that
    # did its work, and before each flash write at rest: a 4 KB sector erase takes 45 ms typical,
    # 400 ms at most on the W25Q16JV). Always on: a servo arm is never left without one.
    ("wdt_ms", 500, 200, 500, 1),
    # Work bounds per loop tick, not times: they cap what one tick spends on the link (on the
    # chip a 32-byte read costs about 2.2 ms, one piece of an event's forwarding up to ~0.7 ms:
    # docs/rp2040.md), so they stay per tick at any period.
    ("link_rx_bytes", 32, 8, 256, 0),        # request bytes read per loop tick
    ("link_events_per_tick", 1, 1, 16, 0),   # pieces of event forwarding per tick (app._forward_events)
    ("log_commit_ms", 1000, 100, 60000, 0),  # at rest, commit the fault log at most this often
    ("recover_safe_z_um", 80000, 20000, 250000, 0),   # a rescue rises at least this high first
    ("boot_sense_ms", 60, 10, 1000, 0),      # inputs read at boot before anything moves
    # pin map (GPIO numbers; ADC channels 0..2 are GP26..28)
    ("pin_estop", 13, 0, 29, 1),
    ("pin_switch", 14, 0, 29, 1),
    ("pin_beam", 15, 0, 29, 1),
    ("pin_led", 25, 0, 29, 1),
    ("adc_pot", 0, 0, 2, 1),
    ("adc_current", 1, 0, 2, 1),
    ("adc_rail", 2, 0, 2, 1),
    # the servo drivers' last-line limits (the pins and pulse calibration are the arm
    # description's servo entries: MOVED_TO_ARM below)
    ("servo0_speed_dps", 240, 10, 1000, 0),
    ("servo0_accel_dps2", 2400, 100, 50000, 0),
    ("servo1_speed_dps", 240, 10, 1000, 0),
    ("servo1_accel_dps2", 2400, 100, 50000, 0),
    ("servo2_speed_dps", 240, 10, 1000, 0),
    ("servo2_accel_dps2", 2400, 100, 50000, 0),
    ("servo3_speed_dps", 300, 10, 1000, 0),
    ("servo3_accel_dps2", 3000, 100, 50000, 0),
    ("servo4_speed_dps", 500, 10, 1000, 0),   # above the machine's jaw slew (80 mm/s = 320 deg/s)
    ("servo4_accel_dps2", 8000, 100, 50000, 0),
    # sensors (docs/conventions.md); pot_closed_counts / pot_counts_per_mm live in "machine"
    ("pot_filter_shift", 2, 0, 6, 0),         # IIR: filtered += (raw - filtered) >> shift
    ("current_offset_counts", 1000, 0, 65535, 0),
    ("current_counts_per_a", 19859, 100, 65535, 0),
    ("current_filter_shift", 2, 0, 6, 0),
    ("current_holding_ma", 150, 0, 5000, 0),
    ("current_stall_ma", 600, 1, 5000, 0),    # gripper current at stall (SG90: about 650 mA at 5 V)
    ("current_stall_ms", 1000, 50, 10000, 0), # at stall this long, in any state: back off, then PWM off
    # servo rail below this: motion holds, RAIL_LOW (0 = no watch). Above the servos' own reset
    # (about 3.8 V), below the deepest sag of normal work (two arm servos at stall: about 4.3 V).
    ("rail_low_mv", 4200, 0, 20000, 0),
    # ... on consecutive reads that span this long, one loop period each (at least one read; a
    # brownout follows within ms): 2 reads at 2 ms, 1 at 4 ms
    ("rail_low_ms", 4, 1, 1000, 0),
    # the rail this far below its unloaded level (read at boot, PWM off) while the arm is still:
    # an arm servo pushing at stall (they have no current sense of their own; 0 = no watch)
    ("rail_stall_sag_mv", 600, 0, 5000, 0),
    ("flash_settle_ms", 300, 0, 5000, 0),     # no flash write until the arm has been still this long
    ("rail_divider_milli", 3000, 1000, 20000, 0),
    ("estop_reset_ms", 6, 1, 100, 0),        # e-stop read released this long before a reset
)

# Settings that moved to the arm description (/arm.json, docs/arm-description.md): each servo's
# pin and pulse calibration. A config.json that still holds one boots; the key is named in the
# rejects ("moved"), and when its value is not what the description says the controller keeps the
# arm still and refuses jobs ("differs"): the board never drives a servo on a pin or pulse range
# other than the one its owner last set without saying so. key -> (servo slot, description field)
MOVED_TO_ARM = {}
for _i in range(5):
    MOVED_TO_ARM["pin_servo%d" % _i] = (_i, "gpio")
    MOVED_TO_ARM["servo%d_min_us" % _i] = (_i, "min_us")
    MOVED_TO_ARM["servo%d_max_us" % _i] = (_i, "max_us")
    MOVED_TO_ARM["servo%d_trim_us" % _i] = (_i, "trim_us")
    MOVED_TO_ARM["servo%d_inverted" % _i] = (_i, "inverted")


def moved_value(arm, key):
    # What the arm description says for a moved setting, in the setting's own terms (inverted:
    # 1 for direction -1), or None when the arm has no servo in that slot.
    slot, field = MOVED_TO_ARM[key]
    s = arm.servo(slot)
    if s is None:
        return None
    if field == "inverted":
        return 1 if s["direction"] < 0 else 0
    return s[field]


_BOARD_INDEX = {}
for _f in BOARD_FIELDS:
    _BOARD_INDEX[_f[0]] = _f
_MACHINE_NAMES = {}
for _f in MACHINE_FIELDS:
    _MACHINE_NAMES[_f[0]] = _f


# GPIOs no Pico brings out to its header (hal/rp2_chips.py): wiring cannot reach them. pin_led 25
# is the board's own LED (on the radio chip of a Pico W / Pico 2 W, where the HAL drives it).
_BOARD_OWN = {23: "SMPS mode, or the radio's power on a W board", 24: "VBUS sense, or the radio's data",
              25: "the LED, or the radio's chip select", 29: "VSYS sense, or the radio's clock"}


NO_SERVO_PINS = (-1, -1, -1, -1, -1)


class Pins:
    # The pin map handed to the HAL. servo: the GPIO of each servo slot, -1 for no servo; the
    # arm description's (Arm.servo_pins), set by the controller once it has loaded the description
    # and read by the HAL at pwm_start. Until then (and with a bad description) no servo has a pin.
    def __init__(self, b):
        self.servo = NO_SERVO_PINS
        self.estop = b["pin_estop"]
        self.switch = b["pin_switch"]
        self.beam = b["pin_beam"]
        self.led = b["pin_led"]
        self.adc_pot = b["adc_pot"]
        self.adc_current = b["adc_current"]
        self.adc_rail = b["adc_rail"]


class SettingsError(ValueError):
    # .other: the key a relation ties .key to (both are wrong together), or None
    def __init__(self, key, message, other=None):
        super().__init__("setting '%s': %s" % (key, message))  # MicroPython: no ValueError.__init__
        self.key = key
        self.other = other


PIN_KEYS = ("pin_estop", "pin_switch", "pin_beam", "pin_led")


def board_defaults():
    d = {}
    for f in BOARD_FIELDS:
        d[f[0]] = f[1]
    return d


def _check_board(key, value):
    f = _BOARD_INDEX.get(key)
    if f is None:
        raise SettingsError(key, "unknown")
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(key, "must be an integer")
    if value < f[2] or value > f[3]:
        raise SettingsError(key, "%d outside %d..%d" % (value, f[2], f[3]))


def _check_board_relations(b):
    used = {}
    for key in PIN_KEYS:
        g = b[key]
        if g in used:
            raise SettingsError(key, "GP%d already used by %s" % (g, used[g]), used[g])
        if 26 <= g <= 28:
            raise SettingsError(key, "GP%d is an ADC pin" % g)
        if g in _BOARD_OWN and not (key == "pin_led" and g == 25):
            raise SettingsError(key, "GP%d is not on the Pico's header (the board's own: %s)" % (g, _BOARD_OWN[g]))
        used[g] = key
    if len(set((b["adc_pot"], b["adc_current"], b["adc_rail"]))) != 3:
        raise SettingsError("adc_pot", "ADC channels must differ")
    if b["current_stall_ma"] <= b["current_holding_ma"]:
        raise SettingsError("current_stall_ma", "must be above current_holding_ma", "current_holding_ma")


class Settings:
    def __init__(self, board=None, machine=None):
        self.board = board_defaults()
        self.cfg = Config()
        self.load_error = ""
        self.rejected = Rejects()     # what load() refused (rejects.py)
        # moved settings the file held (MOVED_TO_ARM): key -> value. Those the arm description
        # disagrees with are written back on save (Controller.check_moved prunes the rest), so
        # a settings change never drops the evidence of a difference.
        self.moved = {}
        if board:
            self.update_board(board)
        if machine:
            self.cfg.update(machine)

    # ---- reading ----

    def get(self, key):
        # -> int, or raises SettingsError for an unknown key
        if key in self.board:
            return self.board[key]
        if key in _MACHINE_NAMES:
            return getattr(self.cfg, key)
        raise SettingsError(key, "unknown")

    def is_key(self, key):
        return key in self.board or key in _MACHINE_NAMES

    def needs_reboot(self, key):
        # From the key's row in its table (board or machine): 1 or 0; 0 for an unknown key.
        f = _BOARD_INDEX.get(key) or _MACHINE_NAMES.get(key)
        return 1 if f is not None and f[4] else 0

    def pins(self):
        return Pins(self.board)

    def reads(self, key):
        # A board time in ms (estop_reset_ms) -> the loop ticks it spans.
        return reads_in(self.board[key], self.cfg.loop_period_ms)

    def servo_limits(self, i):
        return self.board["servo%d_speed_dps" % i], self.board["servo%d_accel_dps2" % i]

    # ---- changing (validate everything first: a bad value changes nothing) ----

    def update_board(self, values):
        merged = dict(self.board)
        for key in values:
            _check_board(key, values[key])
            merged[key] = values[key]
        _check_board_relations(merged)
        self.board = merged

    def set(self, key, value):
        # One key of either section; raises SettingsError / ConfigError (both ValueError).
        if key in _BOARD_INDEX:
            self.update_board({key: value})
        elif key in _MACHINE_NAMES:
            try:
                self.cfg.update({key: value})
            except ValueError as e:
                # Config.update validates before it changes anything: rejected, nothing changed.
                raise SettingsError(key, str(e))
        else:
            raise SettingsError(key, "unknown")

    # ---- the file ----

    def to_json_dict(self):
        b = {}
        for f in BOARD_FIELDS:
            if self.board[f[0]] != f[1]:
                b[f[0]] = self.board[f[0]]
        m = {}
        for f in MACHINE_FIELDS:
            v = getattr(self.cfg, f[0])
            if v != f[1]:
                m[f[0]] = v
        for key in self.moved:
            b[key] = self.moved[key]
        return {"version": VERSION, "board": b, "machine": m}

    def save(self, path=PATH):
        # Write a temporary file, then rename: a power cut leaves the old file or the new one.
        # -> 1 saved, 0 the flash refused it (fsutil.write_atomic)
        return fsutil.write_atomic(path, json.dumps(self.to_json_dict()))


def _field_problem(f, value):
    # f: a (name, default, min, max, ...) row. -> a rejects reason, or None when value fits it.
    if isinstance(value, bool) or not isinstance(value, int):
        return "type"
    if value < f[2] or value > f[3]:
        return "range"
    return None


def _parse(path, rejected):
    # -> the file's JSON object, or None (missing, or rejected as a whole and named)
    status, data = fsutil.read_bounded(path, MAX_FILE_BYTES)
    if status == fsutil.READ_MISSING:
        return None
    reason = fsutil.READ_REASONS[status]
    d = None
    if reason is None:
        try:
            d = json.loads(data.decode())
        except UnicodeError:        # erased flash (0xff), a torn multi-byte character
            reason = "utf8"
        except MemoryError:         # deep nesting: the parser's stack did not fit
            reason = "no_memory"
        except Exception:           # ValueError, RuntimeError (recursion): not JSON
            reason = "json"
        data = None
    if reason is None and not isinstance(d, dict):
        reason = "not_object"
    if reason is None:
        v = d.get("version", VERSION)
        if isinstance(v, bool) or v != VERSION:
            reason = "version"      # another layout: none of it is trusted
    if reason is not None:
        rejected.add("config", "-", reason)
        return None
    return d


def _keep_consistent(good, table, apply, rejected):
    # apply(dict) raises SettingsError/ConfigError (with .key/.field) when the values break a
    # relation between fields. Keep as many of `good` as possible: all of them when they agree
    # (a valid file loads whole); else drop the field the error names, or, when it names a
    # default, add the file's values one by one in the table's order and keep each that agrees
    # with those before. Two fields wrong together (a min not below its max) go together: one
    # kept would be paired with a default it was never meant for.
    for _ in range(len(good) + 1):
        try:
            apply(good)
            return
        except ValueError as e:
            names = (getattr(e, "key", None) or getattr(e, "field", None), getattr(e, "other", None))
        dropped = 0
        for name in names:
            if name in good:
                del good[name]
                rejected.add("config", name, "relation")
                dropped = 1
        if dropped:
            continue
        kept = {}
        for f in table:
            key = f[0]
            if key not in good:
                continue
            trial = dict(kept)
            trial[key] = good[key]
            try:
                apply(trial)
                kept = trial
            except ValueError:
                rejected.add("config", key, "relation")
        apply(kept)
        return


def load(path=PATH, rejected=None):
    # Never raises. A missing file means defaults. From a bad one every value that can be used
    # is kept and every one that cannot is named in settings.rejected (a Rejects, shared with
    # the other boot-time readers when one is passed in); load_error says it in words.
    s = Settings()
    if rejected is not None:
        s.rejected = rejected
    rejected = s.rejected
    before = rejected.count
    d = _parse(path, rejected)
    if d is not None:
        try:
            _take(s, d, rejected)
        except Exception:     # a bug here must not stop the boot: defaults, and say so
            fresh = Settings()
            s.board = fresh.board
            s.cfg = fresh.cfg
            rejected.add("config", "-", "unreadable")
    if rejected.count > before:
        first = rejected.items[before] if before < len(rejected.items) else ("config", "-", "?")
        s.load_error = "%s: %d value(s) rejected, first %s (%s)" % (
            path, rejected.count - before, first[1], first[2])
    return s


def _take(s, d, rejected):
    # The file's JSON object -> s, key by key (see load)
    board = {}
    machine = {}
    # sorted: the same order of rejections on every interpreter (dicts have none)
    for key in sorted(d):
        if key not in ("version", "board", "machine"):
            rejected.add("config", key, "unknown")
    for key, table, good in (("board", _BOARD_INDEX, board), ("machine", _MACHINE_NAMES, machine)):
        section = d.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            rejected.add("config", key, "type")
            continue
        for name in sorted(section):
            f = table.get(name)
            if f is None and key == "board" and name in MOVED_TO_ARM:
                s.moved[name] = section[name]
                rejected.add("config", name, "moved")
                continue
            why = "unknown" if f is None else _field_problem(f, section[name])
            if why is None:
                good[name] = section[name]
            else:
                rejected.add("config", name, why)
    _keep_consistent(board, BOARD_FIELDS, s.update_board, rejected)
    _keep_consistent(machine, MACHINE_FIELDS, s.cfg.update, rejected)
