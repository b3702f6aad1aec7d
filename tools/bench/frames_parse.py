# How fast host/frames.py turns a board's byte stream into frames: frames/s and MB/s, median of
# 5 runs, for a realistic mix (telemetry, events, log records, replies, a little REPL text),
# fed in 4 KiB chunks as a serial read would deliver them. Compare with the USB link: a
# full-speed CDC port moves at most about 1 MB/s in practice, so the parser must beat that.
#   .venv/bin/python tools/bench/frames_parse.py [--frames N] [--chunk BYTES] [--tiny]
# (--tiny: 500 frames, for the tests)
import argparse
import random
import statistics
import time

from surepick.host.link import frames
from surepick.shared_fsm import link


def stream(n, seed=1):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.5:
            f = link.encode(link.T_TELEMETRY, (i * 20 % (1 << 30), rng.randrange(9), 1, 0, i, 3, 1,
                                               rng.randrange(8000, 56000), rng.randrange(-20, 600),
                                               rng.randrange(2), rng.randrange(2), rng.randrange(16),
                                               rng.randrange(4800, 6000), 0, 2000,
                                               rng.randrange(300, 1900), 0))
        elif r < 0.8:
            f = link.event((i, i * 7, 1, rng.randrange(9), rng.randrange(9), rng.randrange(40), 1,
                            rng.randrange(65536), 1, 250, 0, 7))
        elif r < 0.95:
            f = link.log_record(i, 1, (i, i * 7, 1, 2, 3, 4, 1, 23000, 1, 250, 0, 7))
        else:
            f = link.reply(i % 65535 + 1, 0, ("pot_closed_counts", 8000))
        out.append(f.replace(b"\n", b"\r\n"))  # as the board's stdout sends it
        if rng.random() < 0.02:
            out.append(b"MicroPython REPL text line\r\n")
    return b"".join(out)


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
    data = stream(args.frames)
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
