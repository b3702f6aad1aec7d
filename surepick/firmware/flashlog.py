# Crash-safe, bounded, append-only fault log on the board's flash filesystem.
#
# Flash writes stall the RP2040 for tens of ms, so append() only packs a record into a
# preallocated RAM ring; commit() writes the pending records and is called only while the
# arm is at rest. A power cut at any moment leaves a log that parses on the next boot.
#
# On flash: `n_segments` files <dir>/seg<generation>.log of up to `seg_records` fixed-size
# records. The highest generation is the active one; when it is full the oldest file is
# deleted, then a new generation is created (so at most n_segments files, and a cut between
# the two steps leaves n_segments - 1). A record:
#   <u16 magic 0x4C53 "SL"> <u8 rtype> <u8 0> <u32 seq> <12 x i32> <u32 crc32 of the 56 bytes before>
# Sequence numbers start at 1 and rise by one per committed record, across segments and boots.
# Records sit in fixed slots (slot k at byte k * 60). Boot scan: every slot of every segment
# in generation order; a slot that is short, has a bad magic/CRC/type or a seq not above the
# previous valid one is a torn record: skipped and counted (torn_tails). Records after it
# still count, so a torn tail never hides later commits. If the active segment ends in a
# partial slot, the next commit first pads that slot to full size with zeros, keeping the
# slots aligned (a cut during the padding just leaves a shorter partial slot to pad). Torn
# slots take space like records: repeated power cuts cost one slot each, never the history.
# Counters (cycles ok/failed, faults, boots, dropped) persist as R_COUNTERS records: one at
# the end of every commit that changed them, and one as the first record of every segment, so
# the newest copy survives the deletion of older segments.
import struct
import binascii

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


class PosixFs:
    # The filesystem calls FlashLog makes: the board's VFS (littlefs) or a host directory.
    # Tests swap in a wrapper that loses power after a number of bytes.
    def __init__(self):
        import os
        self._os = os

    def listdir(self, path):
        return self._os.listdir(path)

    def mkdir(self, path):
        try:
            self._os.mkdir(path)
        except OSError:
            pass  # exists

    def remove(self, path):
        self._os.remove(path)

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


class FlashLog:
    def __init__(self, path="/log", n_segments=4, seg_records=128, ring_records=64, fs=None):
        if n_segments < 2 or seg_records < 2 or ring_records < 1:
            raise ValueError("flashlog geometry")
        self.path = path
        self.n_segments = n_segments
        self.seg_records = seg_records
        self.ring_records = ring_records
        self.fs = fs or PosixFs()
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
        # per segment: [generation, first_seq, last_seq, valid_records, slots_used]
        self.segments = []
        self.torn_tails = 0
        self.last_seq = 0
        self.last_record_seq = 0  # seq of the newest committed append()ed record
        self._pad = 0  # zero bytes that complete a partial slot at the end of the active segment
        self._rotate_needed = False
        self.fs.mkdir(path)
        self._scan()

    # ---- boot scan ----

    def _seg_path(self, gen):
        return "%s/seg%08d.log" % (self.path, gen)

    def _scan(self):
        gens = []
        for name in self.fs.listdir(self.path):
            g = _gen_of(name)
            if g >= 0:
                gens.append(g)
        gens.sort()
        last = 0
        counters = None
        rec = self._rec
        for g in gens:
            seg = [g, 0, 0, 0, 0]
            self._pad = 0
            f = self.fs.open(self._seg_path(g), "rb")
            try:
                while seg[4] < self.seg_records:
                    got = f.readinto(rec)
                    if not got:
                        break
                    seg[4] += 1
                    if got != REC_SIZE or not _valid(rec) or _seq_of(rec) <= last:
                        self.torn_tails += 1
                        if got != REC_SIZE:
                            self._pad = REC_SIZE - got
                        continue
                    last = _seq_of(rec)
                    if seg[3] == 0:
                        seg[1] = last
                    seg[2] = last
                    seg[3] += 1
                    if rec[2] == R_COUNTERS:
                        counters = struct.unpack_from("<5i", rec, 8)
                    else:
                        self.last_record_seq = last
            finally:
                f.close()
            self.segments.append(seg)
        self.last_seq = last
        if counters is not None:
            for i in range(N_COUNTERS):
                self.counters[i] = counters[i]

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
        # rec: 12 ints (i32). Returns False (and counts) when the ring is full or the record
        # is malformed; sequence numbers are given at commit, so a dropped record leaves no
        # gap in them.
        if self._pending >= self.ring_records or len(rec) != 12 or rtype < 1 or rtype >= R_COUNTERS:
            self.dropped_now += 1
            self.count(C_DROPPED)
            return False
        for v in rec:
            if v < _I32_LO or v > _I32_HI:
                self.dropped_now += 1
                self.count(C_DROPPED)
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

    # ---- commit: the only flash writer ----

    def commit(self):
        # Write every pending record (and a counters record when they changed). Returns the
        # number of records written, or -1 after a filesystem error (the batch is dropped and
        # counted; the next commit starts a new segment: the old one's slot alignment is
        # unknown). Stalls for flash writes: call only
        # while the arm is at rest.
        if not self._pending and not self._counters_dirty:
            return 0
        written = 0
        f = None
        try:
            if self._rotate_needed or not self.segments:
                self._rotate()
            while self._pending or self._counters_dirty:
                seg = self.segments[-1]
                if seg[4] >= self.seg_records:
                    if f is not None:
                        f.close()
                        f = None
                    self._rotate()
                    continue
                if f is None:
                    f = self.fs.open(self._seg_path(seg[0]), "ab")
                    if self._pad:
                        f.write(memoryview(_ZEROS)[:self._pad])  # realign the slots
                        self._pad = 0
                if seg[3] == 0 or not self._pending:
                    # every segment starts with the counters, so the newest copy survives
                    # the deletion of older segments
                    self._counters_record()
                    f.write(self._rec)
                    n = 1
                else:
                    # the longest contiguous run: up to the ring's end and the segment's end
                    n = self.ring_records - self._head
                    if n > self._pending:
                        n = self._pending
                    room = self.seg_records - seg[4]
                    if n > room:
                        n = room
                    for i in range(n):
                        self._seal(self._ring, (self._head + i) * REC_SIZE)
                    off = self._head * REC_SIZE
                    f.write(self._ring_mv[off:off + n * REC_SIZE])
                    self._head += n
                    if self._head == self.ring_records:
                        self._head = 0
                    self._pending -= n
                self._account(seg, n)
                written += n
            if f is not None:
                f.close()
                f = None
        except OSError:
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
            self.write_errors += 1
            self.dropped_now += self._pending
            self.counters[C_DROPPED] += self._pending
            self._counters_dirty = True
            self._head = 0
            self._pending = 0
            self._rotate_needed = True
            return -1
        return written

    def _seal(self, buf, off):
        # give the record at buf[off] its seq and CRC
        self.last_seq += 1
        if buf is self._ring:
            self.last_record_seq = self.last_seq
        struct.pack_into("<I", buf, off + 4, self.last_seq)
        crc = binascii.crc32(memoryview(buf)[off:off + _CRC_AT]) & 0xFFFFFFFF
        struct.pack_into("<I", buf, off + _CRC_AT, crc)

    def _account(self, seg, n):
        if seg[3] == 0:
            seg[1] = self.last_seq - n + 1
        seg[2] = self.last_seq
        seg[3] += n
        seg[4] += n

    def _counters_record(self):
        c = self.counters
        struct.pack_into(_FMT, self._rec, 0, _MAGIC, R_COUNTERS, 0, 0, c[0], c[1], c[2], c[3],
                         c[4], 0, 0, 0, 0, 0, 0, 0, 0)
        self._seal(self._rec, 0)
        self._counters_dirty = False

    def _rotate(self):
        # Delete the oldest segments first (flash stays bounded even if the power goes before
        # the new file exists), then create the next generation, empty: commit() writes its
        # counters record first.
        while len(self.segments) >= self.n_segments:
            self.fs.remove(self._seg_path(self.segments[0][0]))
            self.segments.pop(0)
        gen = self.segments[-1][0] + 1 if self.segments else 0
        self.fs.open(self._seg_path(gen), "wb").close()
        self.segments.append([gen, 0, 0, 0, 0])
        self._rotate_needed = False
        self._pad = 0

    # ---- reading back (LOG_SINCE) ----

    def read_since(self, after_seq, max_count=-1):
        # Yields (seq, rtype, rec tuple) for committed records with seq > after_seq, oldest
        # first, at most max_count of them (-1: all). Reads flash only (no stall); skips
        # whole segments by their seq range, reads at most seg_records slots of the others.
        left = max_count
        rec = self._rd
        floor = after_seq  # seqs only rise: anything else is damage the scan counted
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
    crc = struct.unpack_from("<I", rec, _CRC_AT)[0]
    return (binascii.crc32(memoryview(rec)[0:_CRC_AT]) & 0xFFFFFFFF) == crc
