# One heavy piece of link work per tick (firmware/app.py _link): the firmware's real main loop
# under `micropython` with the scripted stand-in HAL runs a job that retries and then faults
# (fake scenario part_missing), and every tick is looked at from outside, between ticks:
#   - no tick does more than one of: an event's EVENT frame, its flash-log record, its FAULT
#     frame, the TELEMETRY frame's last part (link_events_per_tick 1, the default)
#   - an event's EVENT frame goes out in the tick whose step made it (nothing was queued), its
#     log record in a later tick, a fault's FAULT frame right after that
#   - every event is forwarded in the end, in order
#   - no TELEMETRY frame is older than an EVENT frame sent before it (a host would take its state
#     for the newer one: the monitor showed a placed job as running again)
#   micropython tests/mpy/fw_event_pieces.py FLASH_DIR
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import check, result, finish

flash = sys.argv[1]
spec = fake_scenarios.find("part_missing")
hal = ScriptedHal(Config(spec[2]), spec[1])
# TELEMETRY as often as it goes (a frame takes six ticks): events land while frames are half built
with open(flash + "/config.json", "w") as f:
    f.write('{"version": 1, "board": {"telemetry_hz": 50}}')
a = app_mod.App(hal, root=flash)
hal.out = a.m.out
st = {"out": 0, "made": a.m.events.next_seq, "pending": 0, "sent": 0, "done": -1, "ticks": 0,
      "event_ticks": 0, "piece_ticks": 0, "prompt": 0, "order": [],
      "tel": 0, "stale": 0, "last_event_ms": None}


def on_tick(h):
    st["ticks"] += 1
    new = h.frames(st["out"])
    st["out"] = len(h.console_out)
    made = a.m.events.next_seq - st["made"]
    st["made"] = a.m.events.next_seq
    pend = a.log.pending
    logged = pend - st["pending"] if pend >= st["pending"] and not a.flash_tick else 0
    st["pending"] = pend
    kinds = [f for f, _ in new if f in (link.T_EVENT, link.T_FAULT, link.T_TELEMETRY)]
    pieces = len(kinds) + logged
    if pieces:
        st["piece_ticks"] += 1
    check(pieces <= 1, "tick %d did %d heavy pieces: frames %s, log records %d"
          % (st["ticks"], pieces, kinds, logged))
    if made and a.stats.ticks > 1:
        st["event_ticks"] += 1
        if link.T_EVENT in kinds:
            st["prompt"] += 1
    for f, fields in new:
        if f == link.T_TELEMETRY:
            st["tel"] += 1
            if st["last_event_ms"] is not None and h.ticks_diff(fields[0], st["last_event_ms"]) < 0:
                st["stale"] += 1
        if f == link.T_EVENT:
            st["last_event_ms"] = fields[1]
            st["order"].append(("E", fields[0], fields[2]))
        elif f == link.T_FAULT:
            st["order"].append(("F", fields[0], 0))
    if logged:
        st["order"].append(("L", a.log.pending, 0))
    if not st["sent"] and h.ticks > 40:
        h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
        st["sent"] = 1
    if st["sent"] and st["done"] < 0 and a.m.fault and a.ev_sent == a.m.events.last_seq():
        st["done"] = st["ticks"]
    if (st["done"] >= 0 and st["ticks"] - st["done"] > 50) or st["ticks"] > 60000:
        raise StopRun()


hal.run_app(a, on_tick)

check(a.events_per_tick == 1, "link_events_per_tick defaults to 1")
check(a.telemetry_hz == 50, "the test's telemetry_hz was taken")
check(a.m.fault == 32, "the job faulted GRASP_FAILED (got %d)" % a.m.fault)
order = st["order"]
# each event: L (its log record), then E, then F for a fault
seqs = [s for k, s, _ in order if k == "E"]
check(seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False, "EVENT frames in order %s" % seqs)
check(len(seqs) == a.m.events.last_seq(), "every event sent: %d of %d" % (len(seqs), a.m.events.last_seq()))
i = 0
bad = 0
for k, s, kind in order:
    if k == "E":
        if i + 1 >= len(order) or order[i + 1][0] != "L":
            bad += 1
        elif kind == 1 and (i + 2 >= len(order) or order[i + 2][0] != "F"):
            bad += 1
    i += 1
check(bad == 0, "each EVENT frame, then its log record, then a fault's FAULT frame: %s" % order)
check(st["prompt"] == st["event_ticks"], "EVENT frames sent in the tick that made them: %d of %d"
      % (st["prompt"], st["event_ticks"]))
check(st["stale"] == 0, "%d of %d TELEMETRY frames older than an EVENT frame sent before them"
      % (st["stale"], st["tel"]))
result("events", len(seqs))
result("faults_sent", len([1 for k, _, _ in order if k == "F"]))
result("event_ticks", st["event_ticks"])
result("piece_ticks", st["piece_ticks"])
result("prompt", st["prompt"])
finish()
