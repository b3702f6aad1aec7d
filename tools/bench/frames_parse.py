# How fast host/frames.py turns a board's byte stream into frames: frames/s and MB/s, median of
# 5 runs, for a realistic mix (telemetry, events, log records, replies, a little REPL text),
# fed in 4 KiB chunks as a serial read would deliver them. Compare with the USB link: a
# full-speed CDC port moves at most about 1 MB/s in practice, so the parser must beat that.
#   .venv/bin/python tools/bench/frames_parse.py [--frames N] [--chunk BYTES] [--tiny]
# (--tiny: 500 frames, for the tests)
import argparse
import statistics
import time

import board_stream
from surepick.host.link import frames
from surepick.shared_fsm import link


# Half telemetry, then events, log records and a few replies; now and then a line of REPL text.
MIX = ((0.5, board_stream.telemetry),
       (0.8, lambda rng, i: board_stream.event(rng, i, kind=1)),
       (0.95, lambda rng, i: board_stream.log_record(i, i)),
       (1.0, lambda rng, i: link.reply(i % 65535 + 1, 0, ("pot_closed_counts", 8000))))
REPL_TEXT = 0.02


def one_run(data, chunk):
    p = frames.FrameParser(on_text=lambda t: None)
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(data), chunk):
        n += len(p.feed(data[i:i + chunk]))
    return n, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--tiny", action="store_true", help="500 frames (for the tests)")
    args = ap.parse_args()
    if args.tiny:
        args.frames = 500
    data = board_stream.make(args.frames, MIX, repl_text=REPL_TEXT)
    runs = [one_run(data, args.chunk) for _ in range(5)]
    n = runs[0][0]
    assert n == args.frames and all(r[0] == n for r in runs)
    t = statistics.median(r[1] for r in runs)
    print("frames_parse: %d frames, %d bytes (%.1f B/frame), chunk %d B" % (
        n, len(data), len(data) / n, args.chunk))
    print("median of 5: %.0f frames/s, %.2f MB/s (runs: %s s)" % (
        n / t, len(data) / t / 1e6, ", ".join("%.3f" % r[1] for r in runs)))


if __name__ == "__main__":
    main()
