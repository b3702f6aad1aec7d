# A full flash under firmware/flashlog.py, run by the real `micropython`:
#
#   micropython tests/mpy/flashlog_enospc.py bytes  DIR   a commit that fails with ENOSPC after N
#                                                         bytes, for every N across the commit
#   micropython tests/mpy/flashlog_enospc.py ops    DIR   ... at the k-th create/remove/open, every k
#   micropython tests/mpy/flashlog_enospc.py ring   DIR   flash full while the RAM ring overflows
#   micropython tests/mpy/flashlog_enospc.py wrap   DIR   segment generations across 99,999,999
#
# After every failure: the live log has no seq gap, no duplicate, every committed record intact;
# a reboot (a new FlashLog on the same directory) serves exactly what the live log served (no
# resurrected record); once space is back, one commit writes every record appended, once each,
# in order. Workload records carry an append id in rec[0] and the rest derived from it.
# Prints "FAIL ..." per broken expectation and "RESULT name value"; exit 1 on failure.
import os
import sys

from surepick.firmware import flashlog as fl

ENOSPC = 28
GEOM = (3, 4, 8)          # segments, records per segment, ring: a commit crosses segments
fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        if fails <= 20:
            print("FAIL", what)


def content(aid):
    return (aid, aid * 7 % 1000, aid % 9, (aid + 1) % 9, aid % 13, aid % 3, aid % 65536,
            aid & 1, (aid * 37) % 700 - 50, (aid >> 1) & 1, aid % 16, -aid)


def rtype_of(aid):
    return 1 + aid % 4


class FullFile:
    def __init__(self, fs, f):
        self.fs = fs
        self.f = f

    def write(self, data):
        n = len(data)
        left = self.fs.bytes_left
        if n <= left:
            self.fs.bytes_left -= n
            return self.f.write(data)
        if left > 0:
            self.f.write(bytes(data[:left]))   # what fitted reaches the file, then: full
        self.fs.bytes_left = 0
        raise OSError(ENOSPC)

    def close(self):
        self.f.close()


class FullFs(fl.PosixFs):
    # The flash fills up after `bytes_left` bytes, or at the `ops_left`-th file operation that
    # needs space (create, open for append, remove: littlefs needs a free block for each).
    def __init__(self, bytes_left=1 << 30, ops_left=1 << 30):
        fl.PosixFs.__init__(self)
        self.bytes_left = bytes_left
        self.ops_left = ops_left

    def _op(self):
        if self.ops_left <= 0:
            raise OSError(ENOSPC)
        self.ops_left -= 1

    def remove(self, path):
        self._op()
        fl.PosixFs.remove(self, path)

    def open(self, path, mode):
        if "r" in mode:
            return fl.PosixFs.open(self, path, mode)
        self._op()
        return FullFile(self, fl.PosixFs.open(self, path, mode))


def served(log):
    return [(s, t, tuple(r)) for s, t, r in log.read_since(0)]


def consistent(log, what, appended, committed):
    # -> the data records' append ids. appended: ids appended so far; committed: (seq, rtype,
    # rec) served before this step (each must still be there, or rotated out as a whole prefix)
    got = served(log)
    seqs = [g[0] for g in got]
    check(seqs == list(range(log.first_seq, log.first_seq + len(seqs))), "%s: seq gap %s" % (what, seqs))
    check(not seqs or seqs[-1] == log.last_seq, "%s: last_seq %d, served up to %s" % (what, log.last_seq, seqs[-1:]))
    ids = []
    for s, t, r in got:
        if t == fl.R_COUNTERS:
            continue
        check(r == content(r[0]) and t == rtype_of(r[0]), "%s: record %d damaged" % (what, s))
        ids.append(r[0])
    check(ids == list(range(ids[0], ids[0] + len(ids))) if ids else True,
          "%s: append ids not contiguous (duplicate or lost): %s" % (what, ids))
    check(not ids or ids[-1] < appended, "%s: id %d never appended" % (what, ids[-1] if ids else -1))
    have = {}
    for g in got:
        have[g[0]] = g
    for c in committed:
        if c[0] >= log.first_seq:
            check(have.get(c[0]) == c, "%s: committed record %d changed or lost" % (what, c[0]))
    check(len(log.segments) <= GEOM[0], "%s: %d segments" % (what, len(log.segments)))
    return ids


def reboot_same(log, path, what):
    again = fl.FlashLog(path, log.n_segments, log.seg_records, log.ring_records)
    check(served(again) == served(log), "%s: reboot serves other records:\n  live %s\n  boot %s"
          % (what, [g[0:1] + (g[2][0],) for g in served(log)], [g[0:1] + (g[2][0],) for g in served(again)]))
    check(again.last_seq == log.last_seq, "%s: reboot last_seq %d != %d" % (what, again.last_seq, log.last_seq))
    return again


def one_failure(path, fs):
    # baseline commits, then one commit through `fs`; returns the number of bytes/ops it used
    log = fl.FlashLog(path, *GEOM)
    aid = 0
    for _ in range(2):
        for _ in range(3):
            log.append(rtype_of(aid), content(aid))
            aid += 1
        log.count(fl.C_CYCLES_OK)
        check(log.commit() > 0, "baseline commit")
    committed = served(log)
    for _ in range(7):      # crosses into new segments, rotates one out
        check(log.append(rtype_of(aid), content(aid)), "append %d" % aid)
        aid += 1
    log.count(fl.C_FAULTS)
    log.fs = fs
    r = log.commit()
    what = "after the failed commit (%d)" % r
    consistent(log, what, aid, committed)
    check(r >= 0 or log.write_errors == 1, "error counted")
    live = served(log)
    reboot_same(log, path, what)
    # still full: a retry writes nothing and loses nothing (it may delete the oldest segment,
    # as the rotation it needed always does: at most one, never below n_segments - 1)
    r2 = log.commit()
    if r < 0:
        kept = [g for g in live if g[0] >= log.first_seq]
        check(r2 == -1 and served(log) == kept and len(log.segments) >= GEOM[0] - 1,
              "retry while full changed the log: %d %s -> %s"
              % (r2, [g[0] for g in live], [g[0] for g in served(log)]))
        consistent(log, "after a retry while full", aid, committed)
        reboot_same(log, path, "after a retry while full")
    # space is back: everything appended is written, once, in order
    log.fs = fl.PosixFs()
    log.commit()
    check(log.pending == 0 and log.commit() == 0, "pending left after the space came back")
    ids = consistent(log, "after space came back", aid, committed)
    check(ids and ids[-1] == aid - 1, "last record not written: %s" % ids[-3:])
    again = reboot_same(log, path, "after space came back")
    check(list(again.counters) == list(log.counters), "counters %s != %s" % (again.counters, log.counters))
    check(log.counters[fl.C_DROPPED] == 0, "nothing may be dropped: %s" % log.counters)
    return r


def sweep(base, mode):
    # probe the commit's size through an unlimited FullFs, then fail at every point of it
    probe = FullFs()
    d = base + "/probe"
    os.mkdir(d)
    one_failure(d, probe)
    used = (1 << 30) - (probe.bytes_left if mode == "bytes" else probe.ops_left)
    failed = 0
    for n in range(used + 1):
        d = "%s/%s%d" % (base, mode, n)
        os.mkdir(d)
        fs = FullFs(bytes_left=n) if mode == "bytes" else FullFs(ops_left=n)
        if one_failure(d, fs) < 0:
            failed += 1
    print("RESULT %s_points %d" % (mode, used + 1))
    print("RESULT %s_failed_commits %d" % (mode, failed))


def ring(base):
    # Flash full for longer than the ring lasts: the overflow is dropped, counted, and marked
    # by a counters record exactly where it was lost.
    d = base + "/ring"
    os.mkdir(d)
    log = fl.FlashLog(d, 3, 16, 8)
    aid = 0
    for _ in range(3):
        log.append(rtype_of(aid), content(aid))
        aid += 1
    log.commit()
    log.fs = FullFs(bytes_left=0)
    accepted = []
    for _ in range(12):                  # 8 fit the ring, 4 are lost
        if log.append(rtype_of(aid), content(aid)):
            accepted.append(aid)
        aid += 1
    check(log.commit() == -1 and log.pending == 8, "full flash keeps the ring: %d" % log.pending)
    check(log.dropped_now == 4, "dropped %d" % log.dropped_now)
    log.fs = fl.PosixFs()
    check(log.commit() > 0, "commit once space is back")
    after = aid
    for _ in range(2):
        log.append(rtype_of(aid), content(aid))
        aid += 1
    log.commit()
    got = served(reboot_same(log, d, "ring"))
    ids = [r[0] for s, t, r in got if t != fl.R_COUNTERS]
    check(ids == [0, 1, 2] + accepted + [after, after + 1], "ids %s" % ids)
    # the counters record right after the last accepted record says 4 were dropped
    at = [i for i, g in enumerate(got) if g[1] != fl.R_COUNTERS and g[2][0] == accepted[-1]][0]
    mark = got[at + 1]
    check(mark[1] == fl.R_COUNTERS and mark[2][fl.C_DROPPED] == 4, "no loss mark after %d: %s"
          % (accepted[-1], mark))
    print("RESULT ring_dropped %d" % log.counters[fl.C_DROPPED])


def wrap(base):
    # A log whose generations reached the end of the 8-digit names: made by an ordinary log
    # whose files are then renamed seg99999998.log, seg99999999.log. Logging goes on across the
    # wrap (00000000, 00000001, ...), deleting the oldest by seq, and every reboot reads it all.
    d = base + "/wrap"
    os.mkdir(d)
    log = fl.FlashLog(d, *GEOM)
    aid = 0
    while len(log.segments) < 2 or log.segments[-1][4] < GEOM[1]:
        log.append(rtype_of(aid), content(aid))
        aid += 1
        log.commit()
    os.rename(d + "/seg00000000.log", d + "/seg99999998.log")
    os.rename(d + "/seg00000001.log", d + "/seg99999999.log")
    log = fl.FlashLog(d, *GEOM)
    check([s[0] for s in log.segments] == [99999998, 99999999], "order %s" % log.segments)
    check([r[0] for s, t, r in log.read_since(0) if t != fl.R_COUNTERS] == list(range(aid)),
          "records before the wrap")
    first = log.first_seq
    names = []
    for step in range(40):
        log.append(rtype_of(aid), content(aid))
        aid += 1
        log.commit()
        log = reboot_same(log, d, "wrap step %d" % step)
        ids = consistent(log, "wrap step %d" % step, aid, [])
        check(ids and ids[-1] == aid - 1, "wrap step %d: newest record missing" % step)
        check(log.first_seq >= first, "wrap step %d: went back to seq %d" % (step, log.first_seq))
        first = log.first_seq
        for name in sorted(os.listdir(d)):
            if name not in names:
                names.append(name)
    check("seg00000000.log" in names and "seg00000005.log" in names, "names used %s" % names)
    check(sorted(os.listdir(d)) == sorted(names[-GEOM[0]:]), "files at the end %s, made %s"
          % (sorted(os.listdir(d)), names))
    print("RESULT wrap_generations %d" % len(names))


mode = sys.argv[1]
base = sys.argv[2]
if mode in ("bytes", "ops"):
    sweep(base, mode)
elif mode == "ring":
    ring(base)
elif mode == "wrap":
    wrap(base)
print("RESULT fails %d" % fails)
sys.exit(1 if fails else 0)
