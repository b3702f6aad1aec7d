# Crash-safe, bounded, append-only fault log on the board's flash filesystem.
#
# Flash writes stall the RP2040 for tens of ms, so append() only packs a record into a
# preallocated RAM ring; commit() writes the pending records and is called only while the
# arm is at rest. A power cut at any moment leaves a log that parses on the next boot, and
# whatever the log directory holds, the constructor never raises (the firmware must boot).
#
# On flash: `n_segments` files <dir>/seg<generation>.log of up to `seg_records` fixed-size
# records. Generations count modulo 10**8 (the name keeps 8 digits); the order is circular, the
# oldest segment being the one after the widest gap between generations (there are only a few).
# The newest is the active one; when it is full the oldest file is deleted, then a new
# generation is created (so at most n_segments files, and a cut between the two steps leaves
# n_segments - 1). A record:
#   <u16 magic 0x4C53 "SL"> <u8 rtype> <u8 0> <u32 seq> <12 x i32> <u32 crc32 of the 56 bytes before>
# Sequence numbers start at 1 and rise by one per committed record, across segments and boots,
# up to SEQ_MAX (one small int on the RP2040 and on the link). Records sit in fixed slots (slot
# k at byte k * 60). Boot scan: every slot of every segment in generation order; a slot that is
# short, has a bad magic/CRC/type or a seq not above the previous valid one is a torn record:
# skipped and counted (torn_tails). Records after it still count, so a torn tail never hides
# later commits. If the active segment ends in a partial slot, the next commit first pads that
# slot to full size with zeros, keeping the slots aligned (a cut during the padding just leaves
# a shorter partial slot to pad). Torn slots take space like records: repeated power cuts cost
# one slot each, never the history.
#
# A write that fails part-way (flash full: ENOSPC) loses nothing: the records are given their
# seqs when they are written, and after a failure the segment is read back; the records that
# reached flash are kept under the seqs they were written with, the rest stay pending in RAM and
# are written by a later commit with the next seqs. Until that read-back succeeds nothing more
# is written, so no seq is ever given twice, skipped, or found on flash after a reboot that the
# live log did not serve. The ring is bounded: an append that finds it full is dropped and
# counted, and the place of the loss is marked in the log by a counters record written right
# there (its dropped count rose).
# Counters (cycles ok/failed, faults, boots, dropped) persist as R_COUNTERS records: one at
# the end of every commit that changed them, one as the first record of every segment (so the
# newest copy survives the deletion of older segments), and one where records were dropped.
# What the boot found unusable (a file where the directory belongs, a directory named like a
# segment, counters out of range) is named in `rejected` (rejects.py) and the log goes on
# without it; a log directory that cannot be made leaves the log `disabled` (RAM only).
import struct
import binascii
from array import array

from . import fsutil
from ..shared_fsm.compat import const

REC_SIZE = const(60)
_FMT = "<HBBI12iI"
_HEAD = "<HBBI"  # magic, rtype, flags, seq
_MAGIC = const(0x4C53)
_CRC_AT = const(56)

# record types
R_TRANSITION = const(1)
R_FAULT = const(2)
R_BOOT = const(3)
R_NOTE = const(4)
R_COUNTERS = const(5)
_R_MAX = const(5)

# counter indices (the first ints of an R_COUNTERS record)
C_CYCLES_OK = const(0)
C_CYCLES_FAILED = const(1)
C_FAULTS = const(2)
C_BOOTS = const(3)
C_DROPPED = const(4)
N_COUNTERS = const(5)

_ZEROS = bytes(REC_SIZE)
_I32_LO = -(1 << 31)
_I32_HI = (1 << 31) - 1
SEQ_MAX = const(0x3FFFFFFF)     # 2**30 - 1: the link's K_U30
GEN_MOD = const(100000000)      # generations wrap here: "seg%08d.log" always has 8 digits
_COUNTER_MAX = const(0x1FFFFFFF)  # a restored counter above this is damage, not history
_MAX_GAPS = const(4)            # loss places remembered; more merge into the last one




class PosixFs:
    # The filesystem calls FlashLog makes: the board's VFS (littlefs) or a host directory.
    # Tests swap in a wrapper that loses power, or fills up, after a number of bytes.
    def __init__(self):
        import os
        self._os = os

    def listdir(self, path):
        return self._os.listdir(path)

    def mkdir(self, path):
        try:
            self._os.mkdir(path)
        except OSError:
            pass  # exists (or cannot be made: listdir() says which)

    def remove(self, path):
        self._os.remove(path)

    def rename(self, src, dst):
        fsutil.rename(src, dst)

    def exists(self, path):
        try:
            self._os.stat(path)
            return True
        except OSError:
            return False

    def open(self, path, mode):
        return open(path, mode)


def _gen_of(name):
    # generation number of "seg00000012.log", or -1
    if len(name) != 15 or name[:3] != "seg" or name[11:] != ".log":
        return -1
    d = name[3:11]
    if not d.isdigit():
        return -1
    return int(d)


def _circular(gens):
    # Generations oldest first. They count modulo GEN_MOD and only a few exist at a time, so
    # the oldest is the one after the widest gap between neighbours (the wrap-around included).
    gens.sort()
    if len(gens) < 2:
        return gens
    at = 0
    widest = GEN_MOD - gens[-1] + gens[0]
    for i in range(1, len(gens)):
        if gens[i] - gens[i - 1] > widest:
            widest = gens[i] - gens[i - 1]
            at = i
    return gens[at:] + gens[:at]


def _write(f, data):
    # A short write is a failed one (a full filesystem may report it either way).
    n = f.write(data)
    if n is not None and n != len(data):
        raise OSError(fsutil.ENOSPC)


class FlashLog:
    def __init__(self, path="/log", n_segments=4, seg_records=128, ring_records=64, fs=None,
                 rejected=None):
        if n_segments < 2 or seg_records < 2 or ring_records < 1:
            raise ValueError("flashlog geometry")
        self.path = path
        self.n_segments = n_segments
        self.seg_records = seg_records
        self.ring_records = ring_records
        self.fs = fs or PosixFs()
        self.rejected = rejected  # a rejects.Rejects, or None
        self._ring = bytearray(ring_records * REC_SIZE)
        self._ring_mv = memoryview(self._ring)
        self._head = 0       # oldest pending slot
        self._pending = 0
        self._rec = bytearray(REC_SIZE)  # scratch: boot scan, counters records
        self._rd = bytearray(REC_SIZE)   # scratch: read_since
        self.counters = [0] * N_COUNTERS
        self._counters_dirty = False
        self.dropped_now = 0  # dropped since boot (the persisted total is in counters)
        self.write_errors = 0
        # where records were lost: offsets into the pending ring (a counters record goes there)
        self._gaps = array("i", [0] * _MAX_GAPS)
        self._ngaps = 0
        # per segment: [generation, first_seq, last_seq, valid_records, slots_used]
        self.segments = []
        self.torn_tails = 0
        self.last_seq = 0
        self.last_record_seq = 0  # seq of the newest committed append()ed record
        self._pad = 0  # zero bytes that complete a partial slot at the end of the active segment
        self._newest_gen = -1     # newest generation seen or made (also an unusable one)
        self._bad_gens = []       # generations whose name something unusable holds
        self._plan = None         # a failed write's pieces, until it is read back (_settle)
        self._plan_gen = -1
        self.disabled = False     # no usable log directory: RAM only
        names = self._open_dir()
        if names is not None:
            self._scan(names)

    def _reject(self, key, reason):
        if self.rejected is not None:
            self.rejected.add("log", key, reason)

    # ---- boot scan ----

    def _seg_path(self, gen):
        return "%s/seg%08d.log" % (self.path, gen)

    def _open_dir(self):
        # -> the directory's names, or None (log disabled). A file (or anything) holding the
        # directory's name is moved aside, never deleted: a human may want it.
        fs = self.fs
        try:
            return fs.listdir(self.path)
        except OSError as e:
            err = fsutil.errno_of(e)
        if err == fsutil.ENOTDIR:
            self._reject("-", "not_dir")
            aside = self.path + ".bad"
            i = 0
            while fs.exists(aside) and i < 9:
                i += 1
                aside = "%s.bad%d" % (self.path, i)
            try:
                fs.rename(self.path, aside)
            except OSError:
                pass
        elif err != fsutil.ENOENT:
            self._reject("-", "unreadable")
        fs.mkdir(self.path)
        try:
            return fs.listdir(self.path)
        except OSError:
            self._reject("-", "disabled")
            self.disabled = True
            return None

    def _scan(self, names):
        gens = []
        for name in names:
            g = _gen_of(name)
            if g >= 0:
                gens.append(g)
        gens = _circular(gens)
        if gens:
            self._newest_gen = gens[-1]
        last = 0
        counters = None
        for g in gens:
            try:
                seg, last, c, pad, torn = self._scan_segment(g, last)
            except OSError as e:
                # a directory named like a segment, an unreadable file: skip it, never reuse
                # its name, say so
                self._bad_gens.append(g)
                self._reject("seg%08d.log" % g,
                             "is_dir" if fsutil.errno_of(e) == fsutil.EISDIR else "unreadable")
                continue
            self.torn_tails += torn
            self._pad = pad
            if c is not None:
                counters = c
            self.segments.append(seg)
        self.last_seq = last
        if counters is not None:
            for i in range(N_COUNTERS):
                self.counters[i] = counters[i]

    def _scan_segment(self, g, last, boot=True):
        # Read one segment's slots. -> (segment entry, last valid seq, newest usable counters
        # or None, pad, torn slots). Raises OSError when the file cannot be read.
        seg = [g, 0, 0, 0, 0]
        pad = 0
        torn = 0
        counters = None
        rec = self._rec
        f = self.fs.open(self._seg_path(g), "rb")
        try:
            while seg[4] < self.seg_records:
                got = f.readinto(rec)
                if not got:
                    break
                seg[4] += 1
                if got != REC_SIZE or not _valid(rec) or _seq_of(rec) <= last:
                    torn += 1
                    pad = REC_SIZE - got if got != REC_SIZE else 0
                    continue
                pad = 0
                last = _seq_of(rec)
                if seg[3] == 0:
                    seg[1] = last
                seg[2] = last
                seg[3] += 1
                if rec[2] == R_COUNTERS:
                    c = struct.unpack_from("<5i", rec, 8)
                    if min(c) < 0 or max(c) > _COUNTER_MAX:
                        if boot:
                            self._reject("counters", "range")   # history, not to count on
                    else:
                        counters = c
                else:
                    self.last_record_seq = last
        finally:
            f.close()
        return seg, last, counters, pad, torn

    # ---- summary of what is on flash ----

    @property
    def records(self):
        n = 0
        for s in self.segments:
            n += s[3]
        return n

    @property
    def first_seq(self):
        for s in self.segments:
            if s[3]:
                return s[1]
        return 0

    @property
    def pending(self):
        return self._pending

    # ---- counters ----

    def count(self, index, n=1):
        self.counters[index] += n
        self._counters_dirty = True

    # ---- append: RAM only, cheap, never touches flash ----

    def append(self, rtype, rec):
        # rec: 12 ints (i32). Returns False (counted, and the place marked) when the ring is
        # full or the record is malformed; sequence numbers are given when records are written,
        # so a dropped record leaves no gap in them.
        if self._pending >= self.ring_records or len(rec) != 12 or rtype < 1 or rtype >= R_COUNTERS:
            self._lost()
            return False
        for v in rec:
            if v < _I32_LO or v > _I32_HI:
                self._lost()
                return False
        slot = self._head + self._pending
        if slot >= self.ring_records:
            slot -= self.ring_records
        off = slot * REC_SIZE
        struct.pack_into(_FMT, self._ring, off, _MAGIC, rtype, 0, 0, rec[0], rec[1], rec[2],
                         rec[3], rec[4], rec[5], rec[6], rec[7], rec[8], rec[9], rec[10],
                         rec[11], 0)
        self._pending += 1
        return True

    def _lost(self):
        # Count a dropped record and remember where it was lost (after the pending records):
        # the commit writes a counters record there. No allocation (the ring-full path can be
        # hit from the loop).
        self.dropped_now += 1
        self.count(C_DROPPED)
        p = self._pending
        n = self._ngaps
        if n and self._gaps[n - 1] == p:
            return
        if n == _MAX_GAPS:
            self._gaps[n - 1] = p     # moved later: it still follows every loss it counts
            return
        self._gaps[n] = p
        self._ngaps = n + 1

    # ---- commit: the only flash writer ----

    def commit(self):
        # Write every pending record (and a counters record where needed). Returns the number
        # of records that reached flash, or -1 after a filesystem error (see the top: nothing
        # is lost, the rest is written by a later commit) or with the log disabled. Stalls for
        # flash writes: call only while the arm is at rest.
        if self.disabled:
            return -1
        if self._plan is None and not (self._pending or self._counters_dirty or self._ngaps):
            return 0
        written = 0
        try:
            if self._plan is not None:
                written += self._settle()    # what the last failed write left, first
            while self._pending or self._counters_dirty or self._ngaps:
                if self.last_seq > SEQ_MAX - self.seg_records - 2:
                    self.disabled = True      # ~10**9 records: never on a real board
                    self._reject("-", "range")
                    return -1
                if not self.segments or self.segments[-1][4] >= self.seg_records:
                    self._rotate()
                written += self._write_segment()
        except OSError:
            self.write_errors += 1
            if self._plan is not None:
                try:
                    self._settle()
                except OSError:
                    pass              # still unknown: the next commit reads it back first
            return -1
        return written

    def _write_segment(self):
        # Append to the active segment until it is full or nothing is left, then close it:
        # the close makes it durable, and only then are the seqs, the ring and the segment
        # accounted. Every piece written is noted in self._plan first, for _settle().
        seg = self.segments[-1]
        base = self.last_seq
        seq = base
        slots = seg[4]
        taken = 0             # ring records written
        last_ring = -1        # seq of the last of them
        gi = 0                # loss marks written
        dirty = self._counters_dirty
        plan = []
        self._plan = plan
        self._plan_gen = seg[0]
        f = self.fs.open(self._seg_path(seg[0]), "ab")
        try:
            if self._pad:
                _write(f, memoryview(_ZEROS)[:self._pad])   # realign the slots
            while slots < self.seg_records:
                left = self._pending - taken
                mark = gi < self._ngaps and self._gaps[gi] <= taken
                if (seg[3] == 0 and seq == base) or mark or (left == 0 and dirty):
                    # counters: first in every segment, where records were lost, at the end
                    seq += 1
                    while gi < self._ngaps and self._gaps[gi] <= taken:
                        gi += 1
                    plan.append((seq, 1, -1 - gi))
                    self._counters_record(seq)
                    dirty = False
                    _write(f, self._rec)
                    slots += 1
                    continue
                if left == 0:
                    break
                h = self._head + taken
                if h >= self.ring_records:
                    h -= self.ring_records
                # the longest contiguous run: to the ring's end, the segment's end, a loss mark
                n = self.ring_records - h
                if n > left:
                    n = left
                if n > self.seg_records - slots:
                    n = self.seg_records - slots
                if gi < self._ngaps and n > self._gaps[gi] - taken:
                    n = self._gaps[gi] - taken
                for i in range(n):
                    self._seal(h + i, seq + 1 + i)
                plan.append((seq + 1, n, taken))
                off = h * REC_SIZE
                _write(f, self._ring_mv[off:off + n * REC_SIZE])
                seq += n
                taken += n
                last_ring = seq
                slots += n
        finally:
            f.close()
        self._plan = None
        if seq > base:
            if seg[3] == 0:
                seg[1] = base + 1
            seg[2] = seq
            seg[3] += seq - base
        seg[4] = slots
        self._pad = 0
        self._accept(seq, taken, last_ring, gi, dirty)
        return seq - base

    def _accept(self, seq, taken, last_ring, gi, dirty):
        # These records are durable: seqs up to `seq`, `taken` ring records, `gi` loss marks.
        self.last_seq = seq
        if taken:
            self.last_record_seq = last_ring
            h = self._head + taken
            self._head = h - self.ring_records if h >= self.ring_records else h
            self._pending -= taken
        n = 0
        for i in range(gi, self._ngaps):
            v = self._gaps[i] - taken
            self._gaps[n] = v if v > 0 else 0
            n += 1
        self._ngaps = n
        self._counters_dirty = dirty

    def _settle(self):
        # Read back the segment a failed write went to and keep what reached it: the records
        # found there with seqs above last_seq are a prefix of the write's pieces (bytes land
        # in order), so they say how many ring records, loss marks and counters landed.
        # Raises OSError when the segment cannot be read (then nothing else is written).
        seg = None
        before = 0            # the last valid seq before that segment
        for s in self.segments:
            if s[0] == self._plan_gen:
                seg = s
                break
            if s[3]:
                before = s[2]
        if seg is None:       # rotated away: nothing of the write can be on flash
            self._plan = None
            return 0
        new, last, _, pad, _ = self._scan_segment(seg[0], before, False)
        base = self.last_seq
        landed = last if last > base else base
        taken = 0
        last_ring = -1
        gi = 0
        dirty = self._counters_dirty
        for first, n, what in self._plan:
            if first > landed:
                break
            k = landed - first + 1
            if k > n:
                k = n
            if what >= 0:             # ring records; `what` were taken before this piece
                taken = what + k
                last_ring = first + k - 1
            else:                     # a counters record (and the loss marks before it)
                gi = -1 - what
                dirty = False
        self._plan = None
        seg[1] = new[1]
        seg[2] = new[2]
        seg[3] = new[3]
        seg[4] = new[4]
        self._pad = pad
        self._accept(landed, taken, last_ring, gi, dirty)
        return landed - base

    def _seal(self, slot, seq):
        # give the ring record in `slot` its seq and CRC
        off = slot * REC_SIZE
        struct.pack_into("<I", self._ring, off + 4, seq)
        crc = binascii.crc32(self._ring_mv[off:off + _CRC_AT]) & 0xFFFFFFFF
        struct.pack_into("<I", self._ring, off + _CRC_AT, crc)

    def _counters_record(self, seq):
        c = self.counters
        b = self._rec
        struct.pack_into(_FMT, b, 0, _MAGIC, R_COUNTERS, 0, seq, c[0], c[1], c[2], c[3],
                         c[4], 0, 0, 0, 0, 0, 0, 0, 0)
        crc = binascii.crc32(memoryview(b)[0:_CRC_AT]) & 0xFFFFFFFF
        struct.pack_into("<I", b, _CRC_AT, crc)

    def _rotate(self):
        # Delete the oldest segments first (flash stays bounded even if the power goes before
        # the new file exists), then create the next generation, empty: the commit writes its
        # counters record first.
        while len(self.segments) >= self.n_segments:
            self.fs.remove(self._seg_path(self.segments[0][0]))
            self.segments.pop(0)
        gen = self._newest_gen
        while True:
            gen = gen + 1 if gen + 1 < GEN_MOD else 0
            if gen not in self._bad_gens:
                break
        self.fs.open(self._seg_path(gen), "wb").close()
        self._newest_gen = gen
        self.segments.append([gen, 0, 0, 0, 0])
        self._pad = 0

    # ---- reading back (LOG_SINCE) ----

    def read_since(self, after_seq, max_count=-1):
        # Yields (seq, rtype, rec tuple) for committed records with seq > after_seq, oldest
        # first, at most max_count of them (-1: all). Reads flash only (no stall); skips
        # whole segments by their seq range, reads at most seg_records slots of the others.
        # Never yields above last_seq (a failed write's tail is not served before _settle).
        left = max_count
        rec = self._rd
        floor = after_seq  # seqs only rise: anything else is damage the scan counted
        top = self.last_seq
        for seg in list(self.segments):
            if left == 0:
                return
            if seg[3] == 0 or seg[2] <= after_seq:
                continue
            try:
                f = self.fs.open(self._seg_path(seg[0]), "rb")
            except OSError:  # rotated away meanwhile
                continue
            try:
                for _ in range(seg[4]):
                    if left == 0:
                        return
                    if f.readinto(rec) != REC_SIZE:
                        break
                    if not _valid(rec):
                        continue
                    v = struct.unpack(_FMT, rec)
                    if v[3] > top:
                        return
                    if v[3] > floor:
                        floor = v[3]
                        left -= 1
                        yield v[3], v[1], v[4:16]
            finally:
                f.close()


def _seq_of(rec):
    return struct.unpack_from("<I", rec, 4)[0]


def _valid(rec):
    if rec[0] != 0x53 or rec[1] != 0x4C or rec[2] < 1 or rec[2] > _R_MAX or rec[3] != 0:
        return False
    if _seq_of(rec) > SEQ_MAX:
        return False
    crc = struct.unpack_from("<I", rec, _CRC_AT)[0]
    return (binascii.crc32(memoryview(rec)[0:_CRC_AT]) & 0xFFFFFFFF) == crc
