# Power-cut runs of firmware/flashlog.py under the real `micropython`. One process = one boot:
# it first checks the log left by the previous boot against the witness (what the previous
# boot saw commit() return), then runs a logging workload until the power goes.
#
#   micropython tests/mpy/flashlog_cuts.py torn  DIR SEED BUDGET
#       the log writes through TornFs: after BUDGET units (a byte written = 1, a file
#       created/removed = 1) the write stops part-way and the process "loses power".
#       The process itself appends the witness after every commit() that returned.
#   micropython tests/mpy/flashlog_cuts.py kill  DIR SEED
#       logs forever through the real filesystem, printing "W <id> <seq> <counters>" after
#       every commit() that returned; the test SIGKILLs it after a drawn number of those lines
#       (and a drawn pause) and writes the witness from the last complete line.
#   micropython tests/mpy/flashlog_cuts.py chain DIR SEED BUDGET...
#       one torn boot per BUDGET, in a row in one process, boot i with seed SEED + i: each
#       boot builds its FlashLog afresh from the files, as a new process would (flashlog.py
#       keeps no state outside the FlashLog object; its files are closed before a write's
#       PowerCut leaves the boot). "BOOT i" precedes boot i's output.
#   micropython tests/mpy/flashlog_cuts.py check DIR
#
# Output: "CHECK ok ..." or "CHECK FAIL <why>", then for torn runs "CUT <where> ...".
# Workload records carry an append id in rec[0] and rec[1:] derived from it, so a fresh
# boot can tell an intact record from a damaged one beyond its CRC.
import os
import sys

from prng import Prng
from surepick.firmware import flashlog as fl

N_SEGMENTS = 3
SEG_RECORDS = 8   # tiny segments: rotation on almost every run
RING = 12


class PowerCut(Exception):
    pass


class TornFile:
    def __init__(self, fs, f, size):
        self.fs = fs
        self.f = f
        self.size = size  # bytes in the file so far

    def write(self, data):
        n = len(data)
        left = self.fs.budget
        if n <= left:
            self.fs.budget -= n
            self.size += n
            return self.f.write(data)
        if left:
            self.f.write(bytes(data[:left]))
        self.f.close()
        self.fs.budget = 0
        # "segment-start": the first record of a new segment (the tail of a rotation)
        where = "segment-start" if self.size < fl.REC_SIZE else "write"
        if (self.size + left) % fl.REC_SIZE:
            where += "-mid-record"
        raise PowerCut(where)

    def close(self):
        self.f.close()

    def readinto(self, b):
        return self.f.readinto(b)

    def seek(self, n):
        return self.f.seek(n)


class TornFs(fl.PosixFs):
    def __init__(self, budget):
        fl.PosixFs.__init__(self)
        self.budget = budget

    def _spend(self, where):
        if self.budget <= 0:
            raise PowerCut(where)
        self.budget -= 1

    def remove(self, path):
        self._spend("remove")
        fl.PosixFs.remove(self, path)

    def open(self, path, mode):
        if "w" in mode:
            self._spend("create")
        elif "a" in mode:
            self._spend("open-append")
        f = fl.PosixFs.open(self, path, mode)
        if "r" in mode:
            return f
        return TornFile(self, f, 0 if "w" in mode else os.stat(path)[6])


def content(aid):
    # the 12 ints of workload record number `aid`
    return (aid, aid * 7 % 1000, aid % 9, (aid + 1) % 9, aid % 13, aid % 3, aid % 65536,
            aid & 1, (aid * 37) % 700 - 50, (aid >> 1) & 1, aid % 16, -aid)


def rtype_of(aid):
    return 1 + aid % 4  # transition, fault, boot, note


def witness_line(log, aid):
    # what the workload knows once commit() returned: the newest committed append id, the
    # log's last seq, that record's seq, the counters
    return "%d %d %d %s" % (aid, log.last_seq, log.last_record_seq,
                            " ".join([str(c) for c in log.counters]))


def read_witness(path):
    # -> (append id, last seq, seq of that record, counters) or zeros
    try:
        with open(path) as f:
            v = [int(x) for x in f.read().split()]
        if len(v) == 3 + fl.N_COUNTERS:
            return v[0], v[1], v[2], v[3:]
    except (OSError, ValueError):
        pass
    return 0, 0, 0, [0] * fl.N_COUNTERS


def check(log, witness):
    # -> (error message or None, highest append id on flash)
    w_aid, w_seq, w_dseq, w_cnt = read_witness(witness)
    prev_seq = 0
    prev_aid = 0
    n = 0
    found = False
    for seq, rtype, rec in log.read_since(0):
        if prev_seq and seq != prev_seq + 1:
            return "seq gap %d -> %d" % (prev_seq, seq), 0
        prev_seq = seq
        n += 1
        if rtype == fl.R_COUNTERS:
            continue
        aid = rec[0]
        if tuple(rec) != content(aid) or rtype != rtype_of(aid):
            return "record %d damaged: %r" % (seq, rec), 0
        if prev_aid and aid != prev_aid + 1:
            return "append id gap %d -> %d at seq %d" % (prev_aid, aid, seq), 0
        prev_aid = aid
        if seq == w_dseq:
            if aid != w_aid:
                return "seq %d holds record %d, committed was %d" % (seq, aid, w_aid), 0
            found = True
    if n != log.records:
        return "read_since gave %d of %d records" % (n, log.records), 0
    if log.last_seq < w_seq:
        return "committed seq %d lost (last %d)" % (w_seq, log.last_seq), 0
    # every committed record not rotated out is there: the newest committed one (seq w_dseq)
    # unless older than the oldest record kept, and by the id contiguity all before it
    if w_aid and w_dseq >= log.first_seq and not found:
        return "committed record %d (seq %d) lost; first %d" % (w_aid, w_dseq, log.first_seq), 0
    if n and prev_seq != log.last_seq:
        return "last_seq %d but read %d" % (log.last_seq, prev_seq), 0
    for i in range(fl.N_COUNTERS):
        if log.counters[i] < w_cnt[i]:
            return "counter %d went back %d < %d" % (i, log.counters[i], w_cnt[i]), 0
    if len(log.segments) > N_SEGMENTS:
        return "%d segments" % len(log.segments), 0
    for s in log.segments[:-1]:
        if s[4] != SEG_RECORDS:
            return "closed segment %d not full: %r" % (s[0], s), 0
    if log.first_seq > 1 and len(log.segments) < N_SEGMENTS - 1:
        return "history deleted early: %r" % (log.segments,), 0
    for s in log.segments:
        if s[3]:
            rd = log.read_since(s[1] - 1, 1)
            first = next(rd)
            rd.close()  # closes its file now: a chain of boots in one process keeps no fds
            if first[1] != fl.R_COUNTERS:
                return "segment %d does not start with counters" % s[0], 0
    return None, prev_aid


def boot(path, witness):
    log = fl.FlashLog(path, N_SEGMENTS, SEG_RECORDS, RING)
    err, top = check(log, witness)
    if err:
        print("CHECK FAIL", err)
    else:
        print("CHECK ok records=%d first=%d last=%d torn=%d segs=%d" % (
            log.records, log.first_seq, log.last_seq, log.torn_tails, len(log.segments)))
    return log, top, err is None


def workload(log, rng, top, report):
    # append bursts (sometimes more than the ring holds), bump counters, commit, report
    aid = top + 1
    log.count(fl.C_BOOTS)
    while True:
        for _ in range(rng.below(RING + 4)):
            if log.append(rtype_of(aid), content(aid)):
                aid += 1
        r = rng.below(4)
        if r == 0:
            log.count(fl.C_CYCLES_OK)
        elif r == 1:
            log.count(fl.C_CYCLES_FAILED)
            log.count(fl.C_FAULTS)
        if log.commit() < 0:
            print("COMMIT error")
        report(aid - 1)


def torn_boot(path, witness, seed, budget):
    # One boot that loses power: check the log the last boot left, then log through TornFs
    # until the power goes. Everything it knows of the log comes from the files (a new
    # FlashLog reads them); nothing of it survives the return but the files.
    log, top, ok = boot(path, witness)
    if not ok:
        return False
    rng = Prng(seed)
    log.fs = TornFs(budget)
    commits = [0]

    def report(aid):
        with open(witness, "w") as f:
            f.write(witness_line(log, aid) + "\n")
        commits[0] += 1
    try:
        workload(log, rng, top, report)
    except PowerCut as e:
        print("CUT %s commits=%d" % (e.args[0], commits[0]))
    return True


def main():
    mode = sys.argv[1]
    path = sys.argv[2]
    witness = path + ".witness"
    if mode == "torn":
        torn_boot(path, witness, int(sys.argv[3]), int(sys.argv[4]))
        return
    if mode == "chain":
        # boots in a row in one process: "BOOT i" before boot i's lines; stops at a failed check
        base = int(sys.argv[3])
        for i, budget in enumerate(sys.argv[4:]):
            print("BOOT %d" % i)
            if not torn_boot(path, witness, base + i, int(budget)):
                return
        return
    log, top, ok = boot(path, witness)
    if mode == "check" or not ok:
        return
    rng = Prng(int(sys.argv[3]))

    def report(aid):
        print("W " + witness_line(log, aid))
    workload(log, rng, top, report)


main()
