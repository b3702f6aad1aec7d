# Whatever the flash holds, the board boots: a table of hostile flash contents (erased flash,
# torn or hand-edited files, files where directories belong and the reverse), each written into
# a virtual board's flash next to the deployed firmware and booted by the real `micropython`
# with a Pico-sized heap, in lockstep with the MuJoCo plant. For each one, over the link: a HELLO
# arrives; the first pulse of every servo (from the plant's exchange log) is the pose the board
# should start at, inside its calibrated range; HELLO, STATUS and REJECTS name exactly what was
# rejected; the settings that could be read are in force (CONFIG_GET).
#
# Expected pulses are worked out here by hand from docs/conventions.md (servo angle 0..180 deg
# -> min_us..max_us, plus trim), not by the firmware's servo_cal: the home pose (tool down, jaw
# 30 mm) is servo angles 90, 90, 90, 90 deg and 120 deg for the jaw.
import json
import time

import pytest

from surepick.host.engines.world_service import WorldService, KEEP, EXCHANGE_FIELDS
from surepick.host.engines.vboard import BoardConsole
from tests.support.vboard import deploy_firmware, first_hello, hold_at_boot
from surepick.shared_fsm import link
from surepick.shared_fsm.codes import F_INTERRUPTED
from surepick.host.vboard import VirtualBoard
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

PICO_HEAP = "192wK"          # RP2040-sized (the virtual board's default, stated here on purpose)
HOME_US = (1500, 1500, 1500, 1500, 1833)   # 500 + 2000 * 90/180; jaw 500 + 2000 * 120/180
# A pose the board may use as stored: servo angles 93, 87, 87, 93 deg, jaw 28 mm = 112 deg. A
# stored rest pose is where the arm stood when it was saved, and the world's arm starts at home:
# the pose is a few degrees from home, as a settled arm is. (One far from it is an arm moved by
# hand while off: every servo jumps to it at full speed and the rail watch latches RAIL_LOW.)
REST_OK = {"joints_mdeg": [3000, 87000, -93000, -87000], "jaw_um": 28000}
REST_OK_US = (1533, 1466, 1466, 1533, 1744)
JOB_OK = {"pick": [160000, -60000, 15500, -90000], "place": [150000, 80000, 20500, -90000],
          "width_um": 25000, "max_attempts": 3}
JAW_TOLERANCE_US = 45        # after an interruption the jaw starts where the pot says (+-4 mm)


def _cfg(board=None, machine=None):
    return json.dumps({"version": 1, "board": board or {}, "machine": machine or {}}).encode()


DIR = object()               # write a directory at this path instead of a file

# id -> (files, expected rejects, expected first pulses, settings that must read back, fault)
#   files: {flash path: bytes | DIR}; pulses: a 5-tuple, "arm_off_jaw_pot" (an interruption: the
#   arm's PWM off, the board cannot know where it stands; the jaw where the pot says), or None for
#   "every pulse within range"; settings: {key: value}
CASES = {
    "config_erased": ({"config.json": b"\xff\xff\xff"}, [("config", "-", "utf8")], HOME_US, {}, 0),
    "config_bad_utf8": ({"config.json": b'{"version": 1, "board": {"wdt_ms": 400}, "x": "\xc3\x28"}'},
                        [("config", "-", "utf8")], HOME_US, {"wdt_ms": 500}, 0),
    "config_300k": ({"config.json": b'{"version": 1, "pad": "' + b"x" * 300000 + b'"}'},
                    [("config", "-", "too_big")], HOME_US, {}, 0),
    "config_nesting_20000": ({"config.json": b"[" * 20000}, [("config", "-", "too_big")], HOME_US, {}, 0),
    # within the size bound, too deep for the parser on this heap
    "config_nesting_8000": ({"config.json": b"[" * 8000}, [("config", "-", "no_memory")], HOME_US, {}, 0),
    # an old board's servo settings that say what the (reference) description says: each named
    # as moved, the pulses the description's
    "config_unknown_key_old_servo_keys": (
        {"config.json": _cfg({"servo0_trim_us": 0, "pin_servo1": 3, "servo4_min_us": 500, "bogus_key": 1},
                             {"grasp_dwell_ms": 400})},
        [("config", "bogus_key", "unknown"), ("config", "pin_servo1", "moved"),
         ("config", "servo0_trim_us", "moved"), ("config", "servo4_min_us", "moved")],
        HOME_US, {"grasp_dwell_ms": 400}, 0),
    "config_bad_values": (
        {"config.json": _cfg({"wdt_ms": 1, "telemetry_hz": "10", "pin_estop": 14, "servo3_speed_dps": 25},
                             {"max_attempts": 123456, "current_crush_ma": 100}).replace(b"123456", b"1e400")},
        [("config", "telemetry_hz", "type"), ("config", "wdt_ms", "range"),
         ("config", "max_attempts", "type"), ("config", "pin_estop", "relation"),
         ("config", "current_crush_ma", "relation")],
        HOME_US,
        {"wdt_ms": 500, "telemetry_hz": 10, "pin_estop": 13, "servo3_speed_dps": 25,
         "max_attempts": 3, "current_crush_ma": 600}, 0),
    "rest_valid": ({"rest.json": json.dumps(REST_OK).encode()}, [], REST_OK_US, {}, 0),
    "rest_1e400": ({"rest.json": b'{"joints_mdeg": [1e400, 90000, -90000, -90000], "jaw_um": 30000}'},
                   [("rest", "joints_mdeg", "type")], HOME_US, {}, 0),
    "rest_bad_utf8": ({"rest.json": b'{"joints_mdeg": [0, 90000, -90000, -90000], "jaw_um": \xff}'},
                      [("rest", "-", "utf8")], HOME_US, {}, 0),
    "rest_end_stops": ({"rest.json": b'{"joints_mdeg": [999999999999, 999999999999, 999999999999, '
                                     b'999999999999], "jaw_um": 30000}'},
                       [("rest", "joints_mdeg", "range")], HOME_US, {}, 0),
    "rest_strings": ({"rest.json": b'{"joints_mdeg": ["999999999999", "0", "0", "0"], "jaw_um": "0"}'},
                     [("rest", "joints_mdeg", "type")], HOME_US, {}, 0),
    "rest_jaw_out_of_range": ({"rest.json": b'{"joints_mdeg": [0, 90000, -90000, -90000], "jaw_um": 90000}'},
                              [("rest", "jaw_um", "range")], HOME_US, {}, 0),
    "rest_is_dir": ({"rest.json": DIR}, [("rest", "-", "is_dir")], HOME_US, {}, 0),
    "job_is_dir": ({"job.json": DIR}, [("job", "-", "is_dir")], "arm_off_jaw_pot", {}, F_INTERRUPTED),
    # a pair wrong together is rejected together: the minimum alone kept with the default
    # maximum (or the reverse) would be a setting no one made
    "config_stall_below_holding": ({"config.json": _cfg(board={"current_stall_ma": 100, "current_holding_ma": 200})},
                                   [("config", "current_stall_ma", "relation"),
                                    ("config", "current_holding_ma", "relation")],
                                   HOME_US, {"current_stall_ma": 600, "current_holding_ma": 150}, 0),
    "job_1e400": ({"job.json": json.dumps(dict(JOB_OK, width_um=0)).encode().replace(b'"width_um": 0',
                                                                                     b'"width_um": 1e400')},
                  [("job", "width_um", "type")], "arm_off_jaw_pot", {}, F_INTERRUPTED),
    "job_bad_utf8": ({"job.json": b"\xff" * 40}, [("job", "-", "utf8")], "arm_off_jaw_pot", {}, F_INTERRUPTED),
    "log_is_a_file": ({"log": b"not a directory\n"}, [("log", "-", "not_dir")], HOME_US, {}, 0),
    "log_segment_is_a_dir": ({"log/seg00000001.log": DIR}, [("log", "seg00000001.log", "is_dir")],
                             HOME_US, {}, 0),
}
# Everything at once: the board still boots and lists each file's rejection.
CASES["everything_at_once"] = (
    {"config.json": b"\xff\xff", "rest.json": b"[" * 900, "job.json": b'"not an object"',
     "log": b"x"},
    # in the order the board reads them: settings, log, marker, rest pose
    [("config", "-", "utf8"), ("log", "-", "not_dir"), ("job", "-", "not_object"),
     ("rest", "-", "json")],
    "arm_off_jaw_pot", {}, F_INTERRUPTED)

QUICK = ("config_stall_below_holding", "job_is_dir", "config_erased", "config_unknown_key_old_servo_keys", "config_bad_values", "rest_end_stops",
         "rest_strings", "job_1e400", "log_is_a_file", "log_segment_is_a_dir", "everything_at_once")


def _write_flash(flash, files):
    for path, data in files.items():
        p = flash / path
        p.parent.mkdir(parents=True, exist_ok=True)
        if data is DIR:
            p.mkdir()
        else:
            p.write_bytes(data)


def _reply(con, rid, timeout=20):
    return con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid, timeout)


def _first_pulses(exchanges):
    # The first pulse the board sent to each servo (KEEP = none yet: PWM not started).
    i_p = EXCHANGE_FIELDS.index("p0")
    first = [None] * 5
    for ex in exchanges:
        for i in range(5):
            if first[i] is None and ex[i_p + i] != KEEP:
                first[i] = ex[i_p + i]
    return first


def _calibrated_range(settings, i):
    lo = settings.get("servo%d_min_us" % i, 500) + settings.get("servo%d_trim_us" % i, 0)
    hi = settings.get("servo%d_max_us" % i, 2500) + settings.get("servo%d_trim_us" % i, 0)
    return lo, hi


def boot_hostile(tmp_path, files, keys=()):
    """Deploy, add the hostile files, boot once and ask over the link. Returns (HELLO fields,
    STATUS payload, REJECTS items, {key: CONFIG_GET value}, first pulses, flash dir)."""
    flash = tmp_path / "flash"
    flash.mkdir()
    deploy_firmware(flash)
    _write_flash(flash, files)
    ps = WorldService("nominal", seed=1)
    exchanges = ps.record()
    hold_at_boot(ps)
    with VirtualBoard(flash, world_service=ps, heap=PICO_HEAP) as board:
        con = BoardConsole(board.address)
        try:
            hello, st = first_hello(con, 1)
            assert hello is not None, "no HELLO: boots %d, error %r, plant exchanges %d, console %r" % (
                board.boot_count, board.error, ps.exchanges, board.transcript()[-1500:])
            assert st is not None and st.fields[1] == link.OK, (st, con.tail())
            items = []
            kept = 1
            i = 0
            while i < kept:
                con.send(link.request(link.T_REJECTS, 10 + i, (i,)))
                r = _reply(con, 10 + i)
                assert r is not None and r.fields[1] == link.OK, (r, con.tail())
                kept = r.fields[3]
                if i < kept:
                    items.append(tuple(r.fields[4:7]))
                i += 1
            values = {}
            for n, key in enumerate(keys):
                con.send(link.request(link.T_CONFIG_GET, 100 + n, (key,)))
                r = _reply(con, 100 + n)
                assert r is not None and r.fields[1] == link.OK, (key, r)
                values[key] = r.fields[3]
        finally:
            con.close()
    return hello.fields, st.fields[2:], items, values, _first_pulses(list(exchanges)), flash


def check_case(tmp_path, name):
    files, rejects, pulses, settings, fault = CASES[name]
    hello, status, items, values, first, flash = boot_hostile(tmp_path, files, tuple(settings))
    # what was rejected: STATUS and REJECTS in full, HELLO the count and the first
    assert items == rejects
    assert status[7] == len(rejects), status
    assert hello[6] == len(rejects)
    assert tuple(hello[7:10]) == (rejects[0] if rejects else ())
    # every setting that could be read is in force, every rejected one is at its default
    assert values == settings
    # the servos started where they should, inside their calibrated range (or PWM off: 0)
    assert None not in first, first
    for i in range(5):
        lo, hi = _calibrated_range(settings, i)
        assert lo <= first[i] <= hi or (first[i] == 0 and pulses == "arm_off_jaw_pot" and i < 4), \
            (i, first[i], lo, hi)
    if pulses == "arm_off_jaw_pot":
        assert tuple(first[:4]) == (0, 0, 0, 0), first
        assert abs(first[4] - HOME_US[4]) <= JAW_TOLERANCE_US, first
    else:
        assert tuple(first) == pulses
    # an unusable job marker is still an interruption: latched, never finished
    assert status[1] == fault, status
    return flash


@pytest.mark.parametrize("name", QUICK)
def test_hostile_flash_boots_and_says_what_it_rejected(tmp_path, name):
    flash = check_case(tmp_path, name)
    if name in ("log_is_a_file", "everything_at_once"):
        # moved aside, not deleted; a new log directory took its place
        assert (flash / "log.bad").is_file() and (flash / "log").is_dir()
    if name == "log_segment_is_a_dir":
        assert (flash / "log" / "seg00000001.log").is_dir()
        assert (flash / "log" / "seg00000002.log").is_file()   # the next generation, not reused


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CASES) - set(QUICK)))
def test_more_hostile_flash_boots_and_says_what_it_rejected(tmp_path, name):
    check_case(tmp_path, name)
