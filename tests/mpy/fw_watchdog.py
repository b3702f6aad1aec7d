# The firmware's watchdog under the unix `micropython`, with the scripted stand-in HAL (its feeds
# counted in virtual time):
#  1. wdt_ms: 500 ms by default, and nothing outside 200..500 accepted (0 would switch it off).
#  2. The loop starts it after the boot (the boot never feeds it) with the setting's value.
#  3. It is fed in every tick whose controller part completed, and before each flash write at
#     rest: a CONFIG_SET's tick feeds twice (before the save, after the tick).
#  4. A tick whose controller part fails (a sensor read raising) feeds nothing: the exception
#     leaves the loop, the watchdog would bite wdt_ms later (on a board: reset into the boot).
#   micropython tests/mpy/fw_watchdog.py FLASH_DIR
import os
import sys

from surepick.shared_fsm import link
from surepick.shared_fsm.config import Config
from surepick.firmware import settings as settings_mod
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import check, finish, result

FLASH = sys.argv[1]

# ---- 1. the setting ----
s = settings_mod.Settings()
check(s.board["wdt_ms"] == 500, "default wdt_ms %d" % s.board["wdt_ms"])
for bad in (0, 1, 199, 501, 5000, 8300):
    try:
        s.set("wdt_ms", bad)
        check(False, "wdt_ms %d accepted" % bad)
    except ValueError:
        pass
for good in (200, 350, 500):
    s.set("wdt_ms", good)
    check(s.board["wdt_ms"] == good, "wdt_ms %d refused" % good)
check(s.needs_reboot("wdt_ms"), "wdt_ms needs a reboot")

# ---- 2, 3. a run at rest with a flash write ----
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
_boot = a.boot


def boot_checked():
    _boot()
    check(hal.wdt_ms == 0 and hal.feeds == 0, "the boot neither starts nor feeds the watchdog")


a.boot = boot_checked
st = {"n": 0, "feeds": 0, "started_at_tick": -1, "per_tick": [], "set_tick": -1}


def on_tick(h):
    if a.stats.ticks == 0:
        check(h.feeds == 0, "fed before the first tick")     # the wait for the first period
        return
    if st["started_at_tick"] < 0:
        st["started_at_tick"] = a.stats.ticks
        check(h.wdt_ms == 500, "started with wdt_ms: %d" % h.wdt_ms)
    st["n"] += 1
    fed = h.feeds - st["feeds"]
    st["feeds"] = h.feeds
    st["per_tick"].append((fed, a.flash_tick))
    if st["n"] == 250:                # the arm has settled (flash_settle_ms): writes allowed
        h.send(link.request(link.T_CONFIG_SET, 5, ("grasp_dwell_ms", 380)))
    if st["n"] == 400:
        raise StopRun()


hal.run_app(a, on_tick)
plain = [f for f, fl in st["per_tick"] if not fl]
flash = [f for f, fl in st["per_tick"] if fl]
check(st["started_at_tick"] == 1, "started before the first tick: %d" % st["started_at_tick"])
check(plain and min(plain) == 1 and max(plain) == 1, "one feed per tick: %s" % sorted(set(plain)))
check(flash and min(flash) >= 2, "fed before each flash write too: %s" % flash)
check("config.json" in os.listdir(FLASH), "the CONFIG_SET was saved")
result("ticks", len(st["per_tick"]))
result("flash_ticks", len(flash))
result("feeds", hal.feeds)

# ---- 4. a controller tick that fails ----
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
st = {"n": 0, "feeds_before": -1}


class SensorDied(Exception):
    pass


def broken_read(ch):
    raise SensorDied()


def on_tick2(h):
    if a.stats.ticks == 0:
        return
    st["n"] += 1
    if st["n"] == 100:
        st["feeds_before"] = h.feeds
        st["ticks_before"] = a.stats.ticks
        h.read_u16 = broken_read         # the next tick's inputs fail half way


hal.on_tick = on_tick2
died = 0
try:
    a.run()
except SensorDied:
    died = 1
check(died == 1, "the failure left the loop")
check(a.tick_ok == 0, "the failed tick is not marked done")
check(hal.feeds == st["feeds_before"], "no feed in the failed tick: %d -> %d" % (st["feeds_before"], hal.feeds))
check(a.stats.ticks == st["ticks_before"], "no tick recorded after it")
finish()
