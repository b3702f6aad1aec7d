# How fast the monitor takes in a board's byte stream: frames/s parsed (host/frames.py) AND
# handled as the monitor loop does (status update, telemetry rows and log records into SQLite), in
# 4 KiB chunks as a serial read delivers them; median of 5 runs. Compared with
#   (a) what the firmware sends: TELEMETRY at telemetry_hz (10) plus the EVENT frames of a
#       busy arm (about 20/s while cycling) and a LOG_SINCE batch per second, and
#   (b) what a USB full-speed CDC link can carry at most (~1 MB/s in practice) in frames of
#       this mix's mean size: the ceiling even a misbehaving board could reach.
#   .venv/bin/python tools/bench/monitor_ingest.py [--frames N] [--tiny]
# (--tiny: 500 frames, for the tests)
import argparse
import os
import statistics
import tempfile
import time

import board_stream
from surepick.host.link.frames import FrameParser
from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.status import BoardStatus
from surepick.host.monitor.store import Store
from surepick.shared_fsm import link

TELEMETRY_HZ = 10          # firmware/settings.py default
EVENTS_PER_S = 20          # a cycle of ~9 transitions every ~0.5 s (generous)
LOG_PER_S = 20             # every event is committed and back-filled once
USB_FS_BYTES_PER_S = 1_000_000


# What the monitor loop handles: half telemetry, events of three kinds, log records numbered from 1.
MIX = ((0.5, board_stream.telemetry),
       (0.75, lambda rng, i: board_stream.event(rng, i, kind=rng.randrange(3))),
       (1.0, lambda rng, i: board_stream.log_record(i + 1, i)))


class _NullClient:
    timeouts = 0


def one_run(data, chunk, db):
    store = Store(db)
    status = BoardStatus("bench")
    s = MonitorLoop("bench", store, status)
    s.board_id, s.epoch = "bench-board", 0
    store.touch_board("bench-board")
    logs = []
    t0 = time.perf_counter()
    p = FrameParser(on_text=status.add_text)
    n = 0
    for i in range(0, len(data), chunk):
        for f in p.feed(data[i:i + chunk]):
            n += 1
            if f.ftype == link.T_LOG:
                logs.append((f.fields[0], f.fields[1], f.fields[2:]))
                if len(logs) == 16:          # one LOG_SINCE batch
                    store.add_records("bench-board", 0, logs)
                    logs = []
            else:
                s._on_frame(f)
    store.add_records("bench-board", 0, logs)
    store.flush()
    dt = time.perf_counter() - t0
    store.close()
    return n, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--tiny", action="store_true", help="500 frames (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.frames = 500
    data = board_stream.make(a.frames, MIX)
    mean = len(data) / a.frames
    rates = []
    with tempfile.TemporaryDirectory() as d:
        for k in range(5):
            n, dt = one_run(data, a.chunk, os.path.join(d, "m%d.db" % k))
            rates.append(n / dt)
    r = statistics.median(rates)
    fw = TELEMETRY_HZ + EVENTS_PER_S + LOG_PER_S
    usb = USB_FS_BYTES_PER_S / mean
    print("frames: %d, mean %.0f bytes (telemetry/event/log mix)" % (a.frames, mean))
    print("monitor ingest (parse + status + SQLite): %.0f frames/s (median of 5; runs %s)"
          % (r, ", ".join("%.0f" % x for x in rates)))
    print("firmware output at telemetry_hz=%d, busy arm: ~%d frames/s -> %.0fx headroom"
          % (TELEMETRY_HZ, fw, r / fw))
    print("USB full-speed CDC ceiling (~1 MB/s): ~%.0f frames/s -> %.1fx" % (usb, r / usb))
    print("target >= 10x the link's rate: %s" % ("met" if r >= 10 * fw else "NOT met"))


if __name__ == "__main__":
    main()
