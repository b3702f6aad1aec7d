# What a job allocates once it runs: the firmware's real main loop (App.run) under `micropython`
# with the scripted stand-in HAL and automatic collection off, from the tick after the job's
# request (its moves planned, the heap collected) to the first tick back at rest; the firmware's
# ticks alone (App.tick, the HAL's console output not kept) and everything (the stand-in's fake
# arm too). On a board, heap used during a cycle is what may start an automatic collection
# (~20 ms on an RP2040) inside a tick. Also: how many of the cycle's moves came from the plans
# prepared at the job's start.
#   micropython tests/mpy/fw_job_alloc.py SCENARIO FLASH_DIR
import gc
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

scenario = sys.argv[1]
flash = sys.argv[2]
spec = fake_scenarios.find(scenario)



class TimedApp(app_mod.App):
    # App.tick with the bytes it allocated counted (ints in attributes: counting allocates nothing)
    def tick(self, now):
        u = gc.mem_alloc()
        app_mod.App.tick(self, now)
        d = gc.mem_alloc() - u
        if self.counting:
            self.fw_bytes += d
            if d > self.fw_tick_max:
                self.fw_tick_max = d
            if d > 0:
                self.fw_alloc_ticks += 1


def _discard(data):
    pass


hal = ScriptedHal(Config(spec[2]), spec[1])
hal.console_write = _discard          # the stand-in would keep every frame (heap it grows)
a = TimedApp(hal, root=flash)
a.counting = 0
a.fw_bytes = 0
a.fw_tick_max = 0
a.fw_alloc_ticks = 0
if spec[2]:
    a.settings.cfg.update(spec[2])
    a.m.reconfigure()
hal.out = a.m.out
gc.disable()          # every byte the cycle allocates stays counted in mem_alloc()
st = {"sent": 0, "t0": -1, "base": 0, "prev": 0, "tick_max": 0, "busy_ticks": 0, "seq0": 0, "shrunk": 0}


def on_tick(h):
    # runs at the start of each tick (the scripted HAL's wait), so it sees the previous one whole
    used = gc.mem_alloc()
    if st["t0"] >= 0:
        d = used - st["prev"]
        if d < 0:
            st["shrunk"] += 1         # a collection ran during the cycle
        elif d > st["tick_max"]:
            st["tick_max"] = d
        st["busy_ticks"] += 1
        if not a.busy():
            a.counting = 0
            result("cycle_alloc_bytes", used - st["base"])
            result("fw_cycle_alloc_bytes", a.fw_bytes)
            result("fw_tick_alloc_max_bytes", a.fw_tick_max)
            result("fw_alloc_ticks", a.fw_alloc_ticks)
            result("tick_alloc_max_bytes", st["tick_max"])
            result("collections_in_cycle", st["shrunk"])
            result("busy_ticks", st["busy_ticks"])
            result("moves", a.m.out.move_seq - st["seq0"])
            result("plan_hits", a.motion.hits)
            result("attempts", a.m.attempt)
            result("fault", a.m.fault)
            result("heap_after_collect_used", st["base"])
            raise StopRun()
    elif st["sent"] and a.busy():
        st["t0"] = h.now              # the job's tick is over: planned, collected, started
        st["base"] = used
        st["seq0"] = a.m.out.move_seq
        a.motion.hits = 0
        a.counting = 1
    if not st["sent"] and h.ticks > 40:
        h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
        st["sent"] = 1
    st["prev"] = used
    if h.ticks > 60000:
        raise StopRun()


hal.run_app(a, on_tick)
print("END")
