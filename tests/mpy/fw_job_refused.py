# A refused JOB changes nothing, under the unix `micropython` through the real loop (App.tick)
# with the stand-in HAL: for each refusal (a latched fault, an e-stop latched, a job already
# running, an unreachable pose, an approach height off its bounds) every file on the board's
# flash is byte-identical and every setting the same after it, and the job's approach height
# (JOB's last field) is not in force. A taken job's height is the board's setting from then on,
# on flash once the arm has settled (read back from config.json, not from the settings object).
#   micropython tests/mpy/fw_job_refused.py FLASH_DIR
import json
import os
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config, FIELDS as MACHINE_FIELDS
from surepick.firmware.hal.scripted import ScriptedHal
from surepick.firmware import app as app_mod
from surepick.firmware.settings import BOARD_FIELDS
from checks import check, result, finish
import app_loop

FLASH = sys.argv[1]
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
a.boot()
DEFAULT_APPROACH = a.cfg.approach_height_um
HIGHER = DEFAULT_APPROACH + 5000
JOB = fake_scenarios.PICK + fake_scenarios.PLACE + (25000, 3)
UNREACHABLE = (160000, -60000, 12500, -90000, 900000, 0, 20000, -90000, 25000, 3)


def run(ticks):
    app_loop.run(a, hal, ticks)


def ask(ftype, rid, args=(), ticks=20):
    # -> the REPLY's fields for rid, or None
    return app_loop.ask(a, hal, ftype, rid, args, ticks)[0]


def flash():
    # every file under the flash root, path -> its bytes (directories walked)
    out = {}
    todo = [""]
    while todo:
        d = todo.pop()
        for entry in os.ilistdir(FLASH + d):
            path = d + "/" + entry[0]
            if entry[1] == 0x4000:
                todo.append(path)
            else:
                f = open(FLASH + path, "rb")
                out[path] = f.read()
                f.close()
    return out


def settings():
    # every setting's value, read key by key through the board's own CONFIG_GET path
    return [(f[0], a.settings.get(f[0])) for f in BOARD_FIELDS] + \
           [(f[0], a.settings.get(f[0])) for f in MACHINE_FIELDS]


def quiet():
    # run until nothing on the flash changes over 1 s of board time (writes at rest are done)
    before = flash()
    n = 0
    while n < 20:
        run(500)
        now = flash()
        if now == before:
            return now
        before = now
        n += 1
    check(False, "the flash never went quiet")
    return before


def diff(x, y):
    keys = sorted(set(x) | set(y))
    return [k for k in keys if x.get(k) != y.get(k)]


def refused_changes_nothing(name, rid, args, want):
    files, values = quiet(), settings()
    r = ask(link.T_JOB, rid, args)
    check(r is not None and r[:len(want)] == want, "%s: JOB answered %s, want %s" % (name, r, want))
    check(a.cfg.approach_height_um == DEFAULT_APPROACH, "%s: approach %d in force" % (name, a.cfg.approach_height_um))
    check(settings() == values, "%s: settings changed" % name)
    after = quiet()
    changed = diff(files, after)
    check(not changed, "%s: flash files changed %s" % (name, changed))
    check(not a.settings_unsaved, "%s: a setting waits to be saved" % name)
    result("refused_" + name, 1 if (r is not None and not changed) else 0)


# a latched fault: a job aborted mid-cycle (ABORTED latched, the arm frozen, the marker kept)
quiet()
r = ask(link.T_JOB, 1, JOB, ticks=60)
check(r == (1, link.OK), "first JOB %s" % (r,))
r = ask(link.T_ABORT, 2)
check(r == (2, link.OK) and a.m.fault == 41, "ABORT %s fault %d" % (r, a.m.fault))
refused_changes_nothing("faulted", 3, JOB + (HIGHER,), (3, link.E_FAULTED))
refused_changes_nothing("faulted_bad_height", 4, JOB + (1,), (4, link.E_FAULTED))

# the e-stop pressed and latched
r = ask(link.T_CLEAR_FAULT, 5)
check(r == (5, link.OK) and a.m.fault == 0, "CLEAR_FAULT %s" % (r,))
hal.estop_override = 1
run(200)
check(a.m.fault != 0, "the e-stop latches")
refused_changes_nothing("estop", 6, JOB + (HIGHER,), (6, link.E_FAULTED))
hal.estop_override = -1
run(400)
r = ask(link.T_CLEAR_FAULT, 7)
check(r == (7, link.OK) and a.m.fault == 0, "CLEAR_FAULT after the e-stop %s" % (r,))

# a pose out of reach (found after the plans are made) and a height off its bounds
refused_changes_nothing("unreachable", 8, UNREACHABLE + (HIGHER,), (8, link.E_BAD_VALUE, "unreachable"))
refused_changes_nothing("height_too_low", 9, JOB + (1000,), (9, link.E_BAD_VALUE, "approach_height_um"))
refused_changes_nothing("height_too_high", 10, JOB + (10 ** 9,), (10, link.E_BAD_VALUE, "approach_height_um"))

# a taken job: its height in force at once and on flash once the arm settles
r = ask(link.T_JOB, 11, JOB + (HIGHER,), ticks=20)
check(r == (11, link.OK), "JOB with a height %s" % (r,))
check(a.cfg.approach_height_um == HIGHER, "the taken job's height in force: %d" % a.cfg.approach_height_um)
# ... and while it runs, another job with yet another height is refused busy and changes nothing
values = settings()
r = ask(link.T_JOB, 12, JOB + (HIGHER + 10000,))
check(r == (12, link.E_BUSY), "JOB while busy %s" % (r,))
check(settings() == values, "busy: settings changed")
n = 0
while "/config.json" not in flash() and n < 50:
    run(100)
    n += 1
check(a.m.fault == 0, "the taken job runs: fault %d" % a.m.fault)
saved = json.loads(flash().get("/config.json", "{}"))
got = saved.get("machine", {}).get("approach_height_um")
check(got == HIGHER, "config.json approach_height_um %s, want %d" % (got, HIGHER))
result("taken_height_saved", 1 if got == HIGHER else 0)
finish()
