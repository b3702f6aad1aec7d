# A board's byte stream, made up for the frame benchmarks (frames_parse.py, monitor_ingest.py):
# n frames drawn from a seeded mix that each benchmark names, with plausible field values, lines
# ended "\r\n" as the board's stdout ends them. The same seed gives the same bytes, so runs compare.
# Not a benchmark itself: imported from its folder (a script's own folder is first on sys.path).
import random

from surepick.shared_fsm import link

REPL_LINE = b"MicroPython REPL text line\r\n"


def telemetry(rng, i):
    # the i-th TELEMETRY frame of an arm at work
    return link.encode(link.T_TELEMETRY, (i * 20 % (1 << 30), rng.randrange(9), 1, 0, i, 3, 1,
                                          rng.randrange(8000, 56000), rng.randrange(-20, 600),
                                          rng.randrange(2), rng.randrange(2), rng.randrange(16),
                                          rng.randrange(4800, 6000), 0, 2000,
                                          rng.randrange(300, 1900), 0))


def event(rng, i, kind):
    # the i-th EVENT record (link.EVENT_FIELDS) of this kind, between random states
    return link.event((i, i * 7, kind, rng.randrange(9), rng.randrange(9), rng.randrange(40), 1,
                       rng.randrange(65536), 1, 250, 0, 7))


def log_record(seq, i):
    # LOG record number seq, holding the i-th event
    return link.log_record(seq, 1, (i, i * 7, 1, 2, 3, 4, 1, 23000, 1, 250, 0, 7))


def make(n, mix, seed=1, repl_text=0.0):
    """The bytes of n frames. mix: rows (upto, frame(rng, i)) with cumulative shares, the last
    upto 1.0: a uniform draw picks the first row whose upto is above it. repl_text: the chance,
    after each frame, of a line of REPL text (0: none, and no draw for it)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = rng.random()
        frame = next(frame for upto, frame in mix if r < upto)
        out.append(frame(rng, i).replace(b"\n", b"\r\n"))  # as the board's stdout sends it
        if repl_text and rng.random() < repl_text:
            out.append(REPL_LINE)
    return b"".join(out)

