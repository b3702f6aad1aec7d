# The firmware's real main loop (firmware/app.py App.run) under `micropython` with the scripted
# stand-in HAL: boot, HELLO, a JOB over the link, the fake-HAL scenario's job to its end, then a
# few seconds at rest. Prints the machine's event trace and "RESULT name value" lines.
#   micropython tests/mpy/fw_app_job.py SCENARIO FLASH_DIR [stop_after_ms]
import sys

from surepick.shared_fsm import link, fake_scenarios, trace_text
from surepick.shared_fsm.config import Config
from fw_standin import StandInHal, StopRun
from surepick.firmware import app as app_mod

scenario = sys.argv[1]
flash = sys.argv[2]
tail_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 1500
spec = fake_scenarios.find(scenario)

cfg_for_fake = Config(spec[2])
hal = StandInHal(cfg_for_fake, spec[1])
a = app_mod.App(hal, root=flash)
if spec[2]:
    a.settings.cfg.update(spec[2])   # the scenario's machine overrides, as CONFIG_SET would
    a.m.reconfigure()
hal.out = a.m.out
state = {"sent": 0, "done_at": -1, "ticks": 0, "max_alloc": 0}


def on_tick(h):
    state["ticks"] += 1
    if not state["sent"] and h.ticks > 40:
        h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
        state["sent"] = 1
    if state["sent"] and state["done_at"] < 0 and a.ev_sent > 0 and not a.busy() and not a.cycle_end:
        state["done_at"] = h.now
    if state["done_at"] >= 0 and h.ticks_diff(h.now, state["done_at"]) >= tail_ms:
        raise StopRun()
    if state["ticks"] > 60000:
        raise StopRun()


hal.on_tick = on_tick
try:
    a.run()
except StopRun:
    pass

frames = hal.frames()
names = {}
events = []
replies = []
telem = []
for ftype, fields in frames:
    n = link.SCHEMA[ftype][0]
    names[n] = names.get(n, 0) + 1
    if ftype == link.T_EVENT:
        events.append(fields)
    elif ftype == link.T_REPLY:
        replies.append(fields)
    elif ftype == link.T_TELEMETRY:
        telem.append(fields)
for e in events:
    print(trace_text.event_line(e))
print("REPLIES", replies)
if telem:
    print("TELEMETRY_LAST", telem[-1])
m = a.m
print("RESULT outcome_placed %d" % (1 if m.outcome == 10 else 0))
print("RESULT fault %d" % m.fault)
print("RESULT cycles_ok %d" % a.log.counters[0])
print("RESULT cycles_failed %d" % a.log.counters[1])
print("RESULT faults %d" % a.log.counters[2])
print("RESULT boots %d" % a.log.counters[3])
print("RESULT hello %d" % names.get("HELLO", 0))
print("RESULT telemetry %d" % names.get("TELEMETRY", 0))
print("RESULT events %d" % len(events))
print("RESULT event_frames_match %d" % (1 if len(events) == m.events.last_seq() else 0))
print("RESULT log_last_seq %d" % a.log.last_seq)
print("RESULT log_pending %d" % a.log.pending)
print("RESULT job_reply_ok %d" % (1 if [r for r in replies if r[0] == 7 and r[1] == 0] else 0))
print("RESULT ticks %d" % a.stats.ticks)
print("RESULT overruns %d" % a.stats.overruns)
print("RESULT worst_step_us %d" % a.stats.worst_step_us)
print("RESULT flash_ticks %d" % a.stats.flash_ticks)
print("RESULT feeds %d" % hal.feeds)
print("RESULT wdt_ms %d" % hal.wdt_ms)
if telem:
    t = telem[-1]
    print("RESULT tel_period_us %d" % t[14])
    print("RESULT tel_worst_us %d" % t[15])
    print("RESULT tel_overruns %d" % t[16])
    print("RESULT tel_cycles_ok %d" % t[4])
print("RESULT tx_bytes %d" % a.tx_bytes)
print("RESULT virtual_ms %d" % (a.stats.ticks * 2))
import os
print("RESULT marker %d" % (1 if "job.json" in os.listdir(flash) else 0))
print("RESULT rest %d" % (1 if "rest.json" in os.listdir(flash) else 0))
print("END")
