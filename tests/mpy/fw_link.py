# The firmware's link handlers and config under the unix `micropython`, through the real loop
# (App.tick) with the stand-in HAL: PING, STATUS, CONFIG_GET/SET (validated by the shared
# Config / the board settings, persisted to config.json, refused while busy), LOG_SINCE,
# ABORT/CLEAR_FAULT, CALIBRATE pot/current, and malformed input that must get error replies
# (or silence) and never stop the loop.
#   micropython tests/mpy/fw_link.py FLASH_DIR
import json
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal
from surepick.firmware import app as app_mod
from surepick.firmware import settings as settings_mod
from checks import check, finish
import app_loop

FLASH = sys.argv[1]
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
a.boot()


def run(ticks):
    app_loop.run(a, hal, ticks)


def ask(ftype, rid, args=(), ticks=20):
    # -> (the REPLY's fields for rid, the frames before it)
    r, before, _ = app_loop.ask(a, hal, ftype, rid, args, ticks)
    return r, before


def config_file():
    f = open(FLASH + "/config.json")
    d = json.loads(f.read())
    f.close()
    return d


r, _ = ask(link.T_PING, 1)
check(r[:2] == (1, link.OK) and r[3] == "0.1.0" and r[2].startswith("pico-"), "PING %s" % (r,))
r, before = ask(link.T_STATUS, 2)
check(r is not None and r[1] == link.OK and len(r) == 11 and r[4] == link.BUSY_NONE and r[10] == 0,
      "STATUS %s" % (r,))
check(before and before[-1][0] == link.T_TELEMETRY, "STATUS sends a TELEMETRY first")

# ---- config ----
# Persisting writes flash: refused until the arm has been still for flash_settle_ms since boot.
settle = a.settings.board["flash_settle_ms"]
check(not a.settled(), "not settled %d ms after boot" % (hal.ticks_diff(hal.now, a.still_since),))
r, _ = ask(link.T_CONFIG_SET, 40, ("grasp_dwell_ms", 400), ticks=2)
check(r == (40, link.E_BUSY), "SET before the arm settled: busy %s" % (r,))
run(settle // 2 + 2)
check(a.settled(), "settled after %d ms still" % settle)
r, _ = ask(link.T_CONFIG_GET, 3, ("grasp_dwell_ms",))
check(r == (3, link.OK, "grasp_dwell_ms", 350), "GET grasp_dwell_ms %s" % (r,))
r, _ = ask(link.T_CONFIG_GET, 4, ("pin_estop",))
check(r == (4, link.OK, "pin_estop", 13), "GET pin_estop %s" % (r,))
bound0 = a.m.bound[3]
r, _ = ask(link.T_CONFIG_SET, 5, ("grasp_dwell_ms", 400))
check(r == (5, link.OK, "grasp_dwell_ms", 400, 0), "SET grasp_dwell_ms %s" % (r,))
check(a.m.cfg.grasp_dwell_ms == 400 and a.m.bound[3] == bound0 + 50,
      "the machine uses the new dwell at once (GRASP bound %d -> %d)" % (bound0, a.m.bound[3]))
check(config_file()["machine"] == {"grasp_dwell_ms": 400}, "persisted: %s" % config_file())
r, _ = ask(link.T_CONFIG_SET, 6, ("grasp_dwell_ms", 999999))
check(r == (6, link.E_BAD_VALUE, "grasp_dwell_ms"), "SET out of range %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 7, ("current_crush_ma", 100))
check(r == (7, link.E_BAD_VALUE, "current_crush_ma"), "SET breaking a relation %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 8, ("pin_estop", 14))
check(r == (8, link.E_BAD_VALUE, "pin_estop"), "SET a pin already used %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 9, ("no_such_key", 1))
check(r == (9, link.E_UNKNOWN_KEY, "no_such_key"), "SET unknown %s" % (r,))
r, _ = ask(link.T_CONFIG_GET, 10, ("no_such_key",))
check(r == (10, link.E_UNKNOWN_KEY, "no_such_key"), "GET unknown %s" % (r,))
check(config_file()["machine"] == {"grasp_dwell_ms": 400}, "rejected values left the file alone")
r, _ = ask(link.T_CONFIG_SET, 11, ("pin_led", 16))
check(r == (11, link.OK, "pin_led", 16, 1), "SET pin_led needs a reboot %s" % (r,))
# The loop's period is fixed at boot: a machine setting whose SET says a reboot is needed.
r, _ = ask(link.T_CONFIG_SET, 40, ("loop_period_ms", 4))
check(r == (40, link.OK, "loop_period_ms", 4, 1), "SET loop_period_ms needs a reboot %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 12, ("telemetry_hz", 25))
check(r is not None and r[1] == link.OK, "SET telemetry_hz %s" % (r,))
mark = len(hal.frames())
run(500)
tel = len([f for f in hal.frames()[mark:] if f[0] == link.T_TELEMETRY])
check(24 <= tel <= 26, "telemetry at 25 Hz: %d frames in 1 s" % tel)
check(config_file()["board"] == {"pin_led": 16, "telemetry_hz": 25}, "board persisted %s" % config_file())
s2 = settings_mod.load(FLASH + settings_mod.PATH)
check(s2.get("grasp_dwell_ms") == 400 and s2.get("pin_led") == 16 and not s2.load_error,
      "reloaded from flash")

# ---- calibration ----
r, _ = ask(link.T_CALIBRATE, 13, (link.CAL_CURRENT,), ticks=400)
check(r is not None and r[1] == link.OK and r[2] == "current_offset_counts", "CAL current %s" % (r,))
if r is not None and r[1] == link.OK:
    # the fake's idle gripper draws 10 mA: 1000 + 10 * 19.859 counts
    check(abs(r[3] - 1199) <= 2, "current offset %d" % r[3])
    check(a.current.offset == r[3] and config_file()["board"].get("current_offset_counts") == r[3],
          "current offset applied and persisted")
jaw_before = a.m.out.jaw_um
r, _ = ask(link.T_CALIBRATE, 14, (link.CAL_POT,), ticks=1500)
check(r is not None and r[1] == link.OK and r[2] == "pot_closed_counts", "CAL pot %s" % (r,))
if r is not None and r[1] == link.OK:
    check(abs(r[3] - 8000) <= 5, "pot closed counts %d" % r[3])
    check(a.cfg.pot_closed_counts == r[3], "pot calibration applied")
check(a.m.out.jaw_um == jaw_before, "the jaw goes back after the pot calibration")

# ---- log, abort, clear fault ----
r, before = ask(link.T_LOG_SINCE, 15, (0,))
logs = [f for f in before if f[0] == link.T_LOG]
check(r is not None and r[1] == link.OK and r[2] == len(logs) and len(logs) >= 1, "LOG_SINCE %s" % (r,))
check(logs and logs[0][1][1] == 5, "the first record is the counters record")   # flashlog.R_COUNTERS
r, _ = ask(link.T_ABORT, 16)
check(r == (16, link.E_STATE), "ABORT with nothing running %s" % (r,))
r, _ = ask(link.T_CLEAR_FAULT, 17)
check(r == (17, link.E_STATE, "no_fault"), "CLEAR_FAULT with no fault %s" % (r,))

# ---- busy: a job runs, config and calibration wait ----
r, _ = ask(link.T_JOB, 18, fake_scenarios.PICK + fake_scenarios.PLACE + (25000,), ticks=30)
check(r == (18, link.OK), "JOB %s" % (r,))
r, _ = ask(link.T_JOB, 19, fake_scenarios.PICK + fake_scenarios.PLACE + (25000,))
check(r == (19, link.E_BUSY), "second JOB while busy %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 20, ("grasp_dwell_ms", 300))
check(r == (20, link.E_BUSY), "SET while busy %s" % (r,))
r, _ = ask(link.T_CALIBRATE, 21, (link.CAL_POT,))
check(r == (21, link.E_BUSY), "CALIBRATE while busy %s" % (r,))
r, _ = ask(link.T_JOB, 22, (160000, -60000, 12500, -90000, 900000, 0, 20000, -90000, 25000))
check(r == (22, link.E_BUSY), "unreachable JOB while busy is busy first %s" % (r,))
r, _ = ask(link.T_ABORT, 23)
check(r == (23, link.OK) and a.m.fault == 41, "ABORT a running job %s fault %d" % (r, a.m.fault))
r, _ = ask(link.T_CLEAR_FAULT, 24)
check(r == (24, link.OK) and a.m.fault == 0, "CLEAR_FAULT %s" % (r,))
run(300)
r, _ = ask(link.T_JOB, 25, (160000, -60000, 12500, -90000, 900000, 0, 20000, -90000, 25000))
check(r == (25, link.E_BAD_VALUE, "unreachable"), "unreachable JOB %s" % (r,))
r, _ = ask(link.T_JOB, 26, (160000, -60000, 12500, -90000, 150000, 80000, 20000, -90000, 60000))
check(r == (26, link.E_BAD_VALUE, "bad_job"), "part wider than the jaw %s" % (r,))

# ---- malformed input: error replies or silence, the loop keeps its period ----
ticks0 = a.stats.ticks
bad = [
    b"hello from the REPL\n",                                  # silent
    b"\x1eSP1p,7*00000000\n",                                  # CRC
    b"\x1eSP1p,7\n",                                           # syntax
    b"\x1e" + b"A" * 400 + b"\n",                              # overlong
    link.encode(link.T_TELEMETRY, (0,) * 17),                  # an echo of our own kind: silent
    b"\x1eSP1q,5*" + b"%08X" % 0 + b"\n",
    b"\x1eSP1\x1eSP1p,31*" + (b"%08X" % 0) + b"\n",
    link.encode(link.T_JOB, (32, 1, 2, 3, 4, 5, 6, 7, 8, 9))[:-12] + b"\n",
    b"\x00\xff\x1e\x1e\n\n\r\n",
]
mark = len(hal.frames())
for line in bad:
    hal.send(line)
run(300)
new = hal.frames()[mark:]
errs = [f[1] for f in new if f[0] == link.T_REPLY]
check(len(errs) >= 5 and all(e[1] != link.OK for e in errs), "error replies %s" % errs)
r, _ = ask(link.T_PING, 33)
check(r[:2] == (33, link.OK), "still answering after garbage %s" % (r,))
check(a.stats.ticks >= ticks0, "the loop kept running")

finish()
