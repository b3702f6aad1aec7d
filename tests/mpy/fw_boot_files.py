# The boot-time readers of firmware/settings.py and firmware/boot_recovery.py under the real
# `micropython`, file by file: what each keeps, what each rejects and why, at the edges of every
# range. Expected values are written out here, from the settings table and docs/conventions.md.
#   micropython tests/mpy/fw_boot_files.py DIR
# Prints "FAIL ..." per broken expectation and "RESULT name value"; exit 1 on failure.
import sys

from surepick.firmware import settings as S
from surepick.firmware import boot_recovery as rec
from surepick.firmware.rejects import Rejects, token, CAPACITY

BASE = sys.argv[1]
fails = 0
cases = 0


def check(cond, what):
    global fails, cases
    cases += 1
    if not cond:
        fails += 1
        print("FAIL", what)


def put(name, data):
    f = open(BASE + "/" + name, "wb")
    f.write(data)
    f.close()
    return BASE + "/" + name


def config(data, rejects, kept):
    # rejects: the exact list; kept: {key: value} that must be in force
    s = S.load(put("config.json", data))
    check(s.rejected.items == rejects, "%s: rejected %s, want %s" % (data[:60], s.rejected.items, rejects))
    for k in kept:
        check(s.get(k) == kept[k], "%s: %s = %s, want %s" % (data[:60], k, s.get(k), kept[k]))
    check((s.load_error != "") == bool(rejects), "%s: load_error %r" % (data[:60], s.load_error))
    return s


# a valid file loads whole, nothing rejected
config(b'{"version": 1, "board": {"wdt_ms": 200, "servo1_speed_dps": 10, "telemetry_hz": 0},'
       b' "machine": {"max_attempts": 9, "grasp_dwell_ms": 0}}', [],
       {"wdt_ms": 200, "servo1_speed_dps": 10, "telemetry_hz": 0, "max_attempts": 9, "grasp_dwell_ms": 0})
# values that only agree together are taken together
config(b'{"machine": {"verify_enabled_mask": 1, "verify_required_mask": 1, "grip_monitor_mask": 1,'
       b' "verify_min_agree": 1}}', [],
       {"verify_enabled_mask": 1, "verify_required_mask": 1, "grip_monitor_mask": 1, "verify_min_agree": 1})
config(b'{"board": {"pin_estop": 14, "pin_switch": 13}}', [], {"pin_estop": 14, "pin_switch": 13})
# ... and one that disagrees with a default is dropped alone
config(b'{"machine": {"verify_enabled_mask": 1, "grasp_dwell_ms": 360}}',
       [("config", "verify_enabled_mask", "relation")], {"verify_enabled_mask": 15, "grasp_dwell_ms": 360})
config(b'{"board": {"pin_estop": 14, "pin_led": 16}}', [("config", "pin_estop", "relation")],
       {"pin_estop": 13, "pin_led": 16})
# the servos' pins and calibration moved to the arm description: an old file's keys are named
# ("moved"), kept aside for the controller to compare with the description, never in force
s = config(b'{"board": {"pin_servo0": 7, "servo0_min_us": 1500, "servo4_inverted": true, "wdt_ms": 300}}',
           [("config", "pin_servo0", "moved"), ("config", "servo0_min_us", "moved"),
            ("config", "servo4_inverted", "moved")], {"wdt_ms": 300})
check(s.moved == {"pin_servo0": 7, "servo0_min_us": 1500, "servo4_inverted": True}, "moved %s" % s.moved)
check(not s.is_key("pin_servo0") and s.pins().servo == (-1, -1, -1, -1, -1), "moved keys are no settings")
config(b'{"board": {"current_stall_ma": 100}, "machine": {"current_crush_ma": 150, "current_grip_min_ma": 150}}',
       [("config", "current_stall_ma", "relation"), ("config", "current_crush_ma", "relation"),
        ("config", "current_grip_min_ma", "relation")],
       {"current_stall_ma": 600, "current_crush_ma": 600, "current_grip_min_ma": 150})
# types and ranges, each key on its own
config(b'{"board": {"wdt_ms": 199, "telemetry_hz": true, "pin_led": 25.0, "servo4_speed_dps": 1001,'
       b' "estop_reset_ms": 50}}',
       [("config", "pin_led", "type"), ("config", "servo4_speed_dps", "range"),
        ("config", "telemetry_hz", "type"), ("config", "wdt_ms", "range")],
       {"wdt_ms": 500, "telemetry_hz": 10, "pin_led": 25, "servo4_speed_dps": 500, "estop_reset_ms": 50})
# the watchdog cannot be switched off, nor set beyond 500 ms
config(b'{"board": {"wdt_ms": 0}}', [("config", "wdt_ms", "range")], {"wdt_ms": 500})
config(b'{"board": {"wdt_ms": 501}}', [("config", "wdt_ms", "range")], {"wdt_ms": 500})
# whole-file and section-level problems
config(b'{"version": 2, "board": {"wdt_ms": 200}}', [("config", "-", "version")], {"wdt_ms": 500})
config(b'{"version": true}', [("config", "-", "version")], {})
config(b'', [("config", "-", "json")], {})
config(b'null', [("config", "-", "not_object")], {})
config(b'{"board": null, "machine": {"settle_ms": 300}}', [], {"settle_ms": 300})
config(b'{"board": [1, 2], "machine": {"settle_ms": 300}, "extra": 1}',
       [("config", "extra", "unknown"), ("config", "board", "type")], {"settle_ms": 300})
config(b'{"version": 1, "board": {"wdt_ms": 400}}' + b' ' * 8200, [("config", "-", "too_big")], {"wdt_ms": 500})
# any key becomes a valid link token
config('{"board": {"a b\u00e9": 1, "12": 2, "": 3}}'.encode(),
       [("config", "-", "unknown"), ("config", "_12", "unknown"), ("config", "a_b_", "unknown")], {})
s = config(b'{"board": {' + b", ".join(b'"k%02d": 1' % i for i in range(40)) + b'}}',
           [("config", "k%02d" % i, "unknown") for i in range(CAPACITY)], {})
check(s.rejected.count == 40, "count goes on past the list: %d" % s.rejected.count)
check(token("x" * 30) == "x" * 24 and token("-5") == "_-5" and token("-") == "-", "tokens")
# a missing file: defaults, nothing to say
s = S.load(BASE + "/no_such.json")
check(s.rejected.count == 0 and s.load_error == "", "missing config")


# ---- rest pose ----
def rest(data, stored, rejects, want=None):
    put("rest.json", data)
    r = Rejects()
    q, jaw, ok = rec.read_rest_at(BASE, r)
    check(ok == stored and r.items == rejects, "%s: stored %s rejected %s" % (data[:70], ok, r.items))
    if want is not None:
        check((q, jaw) == want, "%s: pose %s %s" % (data[:70], q, jaw))
    if not stored:
        check((q, jaw) == ((0, 90000, -90000, -90000), 30000), "%s: not the home pose" % data[:70])


# the servos' travel: base -90..90, shoulder 0..180, elbow and wrist -180..0 deg; jaw 0..45 mm
rest(b'{"joints_mdeg": [-90000, 0, -180000, 0], "jaw_um": 0}', True, [], ((-90000, 0, -180000, 0), 0))
rest(b'{"joints_mdeg": [90000, 180000, 0, -180000], "jaw_um": 45000}', True, [],
     ((90000, 180000, 0, -180000), 45000))
rest(b'{"joints_mdeg": [90001, 90000, -90000, -90000], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "range")])
rest(b'{"joints_mdeg": [0, -1, -90000, -90000], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "range")])
rest(b'{"joints_mdeg": [0, 90000, 1, -90000], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "range")])
rest(b'{"joints_mdeg": [0, 90000, -90000, -90000], "jaw_um": 45001}', False, [("rest", "jaw_um", "range")])
rest(b'{"joints_mdeg": [0, 90000, -90000, -90000], "jaw_um": -1}', False, [("rest", "jaw_um", "range")])
rest(b'{"joints_mdeg": [0, 90000, -90000], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "shape")])
rest(b'{"joints_mdeg": [0, 90000, -90000, true], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "type")])
rest(b'{"joints_mdeg": [0, 90000, -90000, -90000]}', False, [("rest", "jaw_um", "type")])
rest(b'{"joints_mdeg": [0, 90000, -90000, -9e4], "jaw_um": 30000}', False, [("rest", "joints_mdeg", "type")])
rest(b'[0, 90000, -90000, -90000]', False, [("rest", "-", "not_object")])
rest(b' ' * 1025, False, [("rest", "-", "too_big")])


# ---- job marker ----
JOB = b'{"pick": [160000, -60000, 15500, -90000], "place": [150000, 80000, 20500, -90000], '


def marker(tail, job, rejects):
    put("job.json", JOB + tail)
    r = Rejects()
    m = rec.read_marker_at(BASE, r)
    check(m is not None and m["job"] == job and r.items == rejects,
          "%s: %s rejected %s" % (tail, m, r.items))


marker(b'"width_um": 25000, "max_attempts": 3}',
       ((160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), 25000, 3), [])
marker(b'"width_um": 25000}', ((160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), 25000, 0), [])
marker(b'"width_um": 0, "max_attempts": 3}', None, [("job", "width_um", "range")])
marker(b'"width_um": 25000, "max_attempts": 10}', None, [("job", "max_attempts", "range")])   # one bound: 9
marker(b'"width_um": 25000, "max_attempts": "3"}', None, [("job", "max_attempts", "type")])
put("job.json", b'{"pick": [1, 2, 3, 181000], "place": [1, 2, 3, 4], "width_um": 1}')
r = Rejects()
check(rec.read_marker_at(BASE, r) == {"job": None, "counted": 0} and r.items == [("job", "pick", "range")],
      "pitch %s" % r.items)
put("job.json", JOB + b'"width_um": 25000, "counted": 1}')
check(rec.read_marker_at(BASE, Rejects())["counted"] == 1, "a marker a boot counted says so")
put("job.json", b'{"counted": 1}')
r = Rejects()
check(rec.read_marker_at(BASE, r) == {"job": None, "counted": 1} and r.items == [], "a torn marker kept as counted %s"
      % r.items)
import os
os.remove(BASE + "/job.json")
check(rec.read_marker_at(BASE, Rejects()) is None, "no marker: no interruption")

print("RESULT cases %d" % cases)
print("RESULT fails %d" % fails)
sys.exit(1 if fails else 0)
