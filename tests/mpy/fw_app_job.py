# The firmware's real main loop (firmware/app.py App.run) under `micropython` with the scripted
# stand-in HAL: boot, HELLO, a JOB over the link, the fake-HAL scenario's job to its end, then a
# few seconds at rest. Prints the machine's event trace and "RESULT name value" lines.
#   micropython tests/mpy/fw_app_job.py SCENARIO FLASH_DIR [stop_after_ms]
import sys

from surepick.shared_fsm import link, fake_scenarios, trace_text
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

scenario = sys.argv[1]
flash = sys.argv[2]
tail_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 1500
spec = fake_scenarios.find(scenario)

cfg_for_fake = Config(spec[2])
hal = ScriptedHal(cfg_for_fake, spec[1])
a = app_mod.App(hal, root=flash)
if spec[2]:
    a.settings.cfg.update(spec[2])   # the scenario's machine overrides, as CONFIG_SET would
    a.m.reconfigure()
hal.out = a.m.out
state = {"sent": 0, "done_at": -1, "ticks": 0, "max_alloc": 0, "feeds": 0, "feed_bad": 0}


def on_tick(h):
    state["ticks"] += 1
    if a.stats.ticks:
        # the watchdog: exactly one feed in a tick without a flash write, at least one with
        fed = h.feeds - state["feeds"]
        state["feeds"] = h.feeds
        if fed < 1 or (fed != 1 and not a.flash_tick):
            state["feed_bad"] += 1
    if not state["sent"] and h.ticks > 40:
        h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
        state["sent"] = 1
    if state["sent"] and state["done_at"] < 0 and a.ev_sent > 0 and not a.busy() and (not a.cycle_open or a.pose_saved):
        state["done_at"] = h.now
    if state["done_at"] >= 0 and h.ticks_diff(h.now, state["done_at"]) >= tail_ms:
        raise StopRun()
    if state["ticks"] > 60000:
        raise StopRun()


hal.run_app(a, on_tick)

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
result("outcome_placed", 1 if m.outcome == 10 else 0)
result("fault", m.fault)
result("cycles_ok", a.log.counters[0])
result("cycles_failed", a.log.counters[1])
result("faults", a.log.counters[2])
result("boots", a.log.counters[3])
result("hello", names.get("HELLO", 0))
result("telemetry", names.get("TELEMETRY", 0))
result("events", len(events))
result("event_frames_match", 1 if len(events) == m.events.last_seq() else 0)
result("log_last_seq", a.log.last_seq)
result("log_pending", a.log.pending)
result("job_reply_ok", 1 if [r for r in replies if r[0] == 7 and r[1] == 0] else 0)
result("ticks", a.stats.ticks)
result("overruns", a.stats.overruns)
result("worst_step_us", a.stats.worst_step_us)
result("flash_ticks", a.stats.flash_ticks)
result("feeds", hal.feeds)
result("feed_bad_ticks", state["feed_bad"])
result("wdt_ms", hal.wdt_ms)
if telem:
    t = telem[-1]
    result("tel_period_us", t[14])
    result("tel_worst_us", t[15])
    result("tel_overruns", t[16])
    result("tel_cycles_ok", t[4])
result("tx_bytes", a.tx_bytes)
result("virtual_ms", a.stats.ticks * a.cfg.loop_period_ms)
import os
result("marker", 1 if "job.json" in os.listdir(flash) else 0)
result("rest", 1 if "rest.json" in os.listdir(flash) else 0)
print("END")
