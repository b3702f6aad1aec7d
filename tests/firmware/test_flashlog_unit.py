# firmware/flashlog.py on CPython with a directory as the flash: append never touches flash,
# commit persists, rotation keeps the sequence rising and the counters alive, and a power cut
# after ANY number of bytes (every budget tried, in-process) leaves a log that parses with
# every committed record intact.
import os

import pytest

from surepick.firmware import flashlog as fl


def rec(i):
    return (i, i * 3, i % 7, 1, 2, 3, 1, 20000 + i, i & 1, -i, 0, 5)


class SpyFs(fl.PosixFs):
    def __init__(self):
        super().__init__()
        self.ops = []

    def remove(self, path):
        self.ops.append(("remove", os.path.basename(path)))
        super().remove(path)

    def open(self, path, mode):
        self.ops.append((mode, os.path.basename(path)))
        return super().open(path, mode)


def test_append_stays_in_ram_until_commit(tmp_path):
    fs = SpyFs()
    log = fl.FlashLog(str(tmp_path), 3, 8, 16, fs=fs)
    fs.ops.clear()
    for i in range(10):
        assert log.append(fl.R_TRANSITION, rec(i))
    log.count(fl.C_CYCLES_OK)
    assert fs.ops == [] and log.pending == 10
    assert log.commit() == 12  # counters first in a new segment, 10 records, counters again
    assert log.pending == 0 and log.commit() == 0
    again = fl.FlashLog(str(tmp_path), 3, 8, 16)
    got = list(again.read_since(0))
    data = [r for r in got if r[1] != fl.R_COUNTERS]
    assert [r[2] for r in data] == [rec(i) for i in range(10)]
    assert [r[0] for r in got] == list(range(1, 13))
    assert again.counters[fl.C_CYCLES_OK] == 1 and again.torn_tails == 0


def test_rotation_bounds_the_files_and_keeps_seq_and_counters(tmp_path):
    log = fl.FlashLog(str(tmp_path), 3, 8, 16)
    log.count(fl.C_FAULTS, 7)
    for i in range(200):
        log.append(fl.R_NOTE, rec(i))
        if i % 5 == 4:
            log.commit()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 3 and all(os.path.getsize(tmp_path / f) <= 8 * fl.REC_SIZE for f in files)
    again = fl.FlashLog(str(tmp_path), 3, 8, 16)
    assert again.last_seq == log.last_seq and again.records == log.records
    assert again.counters[fl.C_FAULTS] == 7  # long after the commit that changed it
    seqs = [r[0] for r in again.read_since(0)]
    assert seqs == list(range(again.first_seq, again.last_seq + 1))
    assert again.first_seq > 200 - 3 * 8
    again.append(fl.R_NOTE, rec(999))
    again.commit()
    assert list(again.read_since(again.last_seq - 1)) == [(again.last_seq, fl.R_NOTE, rec(999))]


def test_read_since_bounds_and_skips(tmp_path):
    log = fl.FlashLog(str(tmp_path), 4, 16, 64)  # room for all of it
    for i in range(30):
        log.append(fl.R_TRANSITION, rec(i))
    log.commit()
    assert [r[0] for r in log.read_since(10, 5)] == [11, 12, 13, 14, 15]
    assert list(log.read_since(log.last_seq)) == []
    assert [r[0] for r in log.read_since(0)] == list(range(1, log.last_seq + 1))


def test_ring_overflow_drops_newest_counts_and_leaves_no_seq_gap(tmp_path):
    log = fl.FlashLog(str(tmp_path), 3, 8, 4)
    results = [log.append(fl.R_TRANSITION, rec(i)) for i in range(6)]
    assert results == [True] * 4 + [False] * 2
    assert not log.append(fl.R_COUNTERS, rec(0))  # reserved for the log itself
    assert not log.append(fl.R_NOTE, rec(0)[:11])
    assert not log.append(fl.R_NOTE, (1 << 31,) + rec(0)[1:])
    assert log.dropped_now == 5
    log.commit()
    again = fl.FlashLog(str(tmp_path), 3, 8, 4)
    assert again.counters[fl.C_DROPPED] == 5
    seqs = [r[0] for r in again.read_since(0)]
    assert seqs == list(range(1, len(seqs) + 1))


def test_bit_rot_in_a_closed_segment_is_a_counted_torn_tail(tmp_path):
    log = fl.FlashLog(str(tmp_path), 3, 8, 16)
    for i in range(12):
        log.append(fl.R_TRANSITION, rec(i))
    log.commit()
    first = sorted(os.listdir(tmp_path))[0]
    with open(tmp_path / first, "r+b") as f:
        f.seek(3 * fl.REC_SIZE + 20)
        f.write(b"\xff")
    again = fl.FlashLog(str(tmp_path), 3, 8, 16)
    assert again.torn_tails == 1 and again.segments[0][3] == 7 and again.segments[0][4] == 8
    assert again.last_seq == log.last_seq  # the records after it still read
    seqs = [r[0] for r in again.read_since(0)]
    assert len(seqs) == log.records - 1 and seqs == sorted(seqs)


class FailingFs(fl.PosixFs):
    def __init__(self, fail_after):
        super().__init__()
        self.left = fail_after

    def open(self, path, mode):
        f = super().open(path, mode)
        if "r" in mode:
            return f
        fs = self

        class W:
            def write(self, data):
                if fs.left <= 0:
                    f.write(bytes(data[:7]))
                    raise OSError(28, "ENOSPC")
                fs.left -= 1
                return f.write(data)

            def close(self):
                f.close()
        return W()


def test_filesystem_error_keeps_the_batch_for_the_next_commit(tmp_path):
    # A write that fails part-way (7 bytes of the batch land, then ENOSPC) numbers nothing:
    # the batch stays pending, the next commit pads the torn slot and writes it in order.
    log = fl.FlashLog(str(tmp_path), 3, 8, 16, fs=FailingFs(2))
    for i in range(5):
        log.append(fl.R_TRANSITION, rec(i))
    assert log.commit() == 6  # counters + 5 records, 2 writes
    for i in range(5, 9):
        log.append(fl.R_TRANSITION, rec(i))
    assert log.commit() == -1 and log.write_errors == 1 and log.pending == 4
    assert log.last_seq == 6 and [r[0] for r in log.read_since(0)] == list(range(1, 7))
    log.fs = fl.PosixFs()
    log.append(fl.R_FAULT, rec(100))
    assert log.commit() == 6  # the torn slot's segment has room for 1, then counters + 4
    again = fl.FlashLog(str(tmp_path), 3, 8, 16)
    got = [r for r in again.read_since(0) if r[1] != fl.R_COUNTERS]
    assert [r[2][0] for r in got] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 100]
    assert [r[0] for r in again.read_since(0)] == list(range(1, 13))
    assert again.counters[fl.C_DROPPED] == 0 and again.torn_tails == 1


def test_geometry_is_checked(tmp_path):
    with pytest.raises(ValueError):
        fl.FlashLog(str(tmp_path), 1, 8, 4)


# ---- every possible power-cut point of one scenario ----

class PowerCut(Exception):
    pass


class TornFs(fl.PosixFs):
    # a byte written costs 1, creating/removing a file costs 1; at 0 the power goes, part-way
    # through a write if need be
    def __init__(self, budget):
        super().__init__()
        self.budget = budget

    def _spend(self):
        if self.budget <= 0:
            raise PowerCut()
        self.budget -= 1

    def remove(self, path):
        self._spend()
        super().remove(path)

    def open(self, path, mode):
        if "r" not in mode:
            self._spend()
        f = super().open(path, mode)
        if "r" in mode:
            return f
        fs = self

        class W:
            def write(self, data):
                data = bytes(data)
                if len(data) > fs.budget:
                    f.write(data[:fs.budget])
                    f.close()
                    fs.budget = 0
                    raise PowerCut()
                fs.budget -= len(data)
                return f.write(data)

            def close(self):
                f.close()
        return W()


GEOM = (3, 4, 6)  # segments, records per segment, ring


def scenario(path, fs, witness):
    # boot, then batches of 0..7 records (some overflow the ring), commits, counters
    log = fl.FlashLog(path, *GEOM)
    log.fs = fs
    log.count(fl.C_BOOTS)
    aid = 0
    for batch in (3, 0, 7, 5, 1, 6, 2):  # overflows the ring, rotates several times
        for _ in range(batch):
            if log.append(fl.R_TRANSITION, rec(aid)):
                aid += 1
        log.count(fl.C_CYCLES_OK)
        log.commit()
        witness.append((aid - 1, log.last_seq, log.last_record_seq, list(log.counters)))
    return log


def verify(path, witness):
    log = fl.FlashLog(path, *GEOM)
    got = list(log.read_since(0))
    seqs = [r[0] for r in got]
    assert seqs == list(range(log.first_seq, log.last_seq + 1)) if got else log.records == 0
    data = [r[2] for r in got if r[1] != fl.R_COUNTERS]
    assert all(r == rec(r[0]) for r in data)  # intact
    ids = [r[0] for r in data]
    assert ids == list(range(ids[0], ids[0] + len(ids))) if ids else True
    if witness:
        last_id, seq, dseq, counters = witness[-1]
        assert log.last_seq >= seq
        if last_id >= 0 and dseq >= log.first_seq:
            # the newest committed record is there under its seq (and, ids being
            # contiguous, every committed record after the oldest one kept)
            assert [r[2][0] for r in got if r[0] == dseq] == [last_id]
        assert all(a >= b for a, b in zip(log.counters, counters))
    assert len(log.segments) <= GEOM[0]
    for s in log.segments[:-1]:
        assert s[4] == GEOM[1]  # closed only when full (torn slots count as used)
    return log


def test_power_cut_after_every_possible_byte(tmp_path):
    probe = TornFs(10 ** 9)
    scenario(str(tmp_path / "probe"), probe, [])
    spent = 10 ** 9 - probe.budget
    assert spent > 1500
    torn_seen = 0
    for budget in range(spent + 1):
        path = str(tmp_path / ("cut%d" % budget))
        witness = []
        try:
            scenario(path, TornFs(budget), witness)
        except PowerCut:
            pass
        else:
            assert budget == spent
        log = verify(path, witness)
        torn_seen += log.torn_tails > 0
        # the next boot keeps logging, and the one after still parses
        data = [r[2][0] for r in log.read_since(0) if r[1] != fl.R_COUNTERS]
        nxt = data[-1] + 1 if data else 0
        log.append(fl.R_BOOT, rec(nxt))
        assert log.commit() > 0
        after = verify(path, witness)
        assert list(after.read_since(after.last_seq - 1))[0][2] == rec(nxt)
    assert torn_seen > spent * 0.8  # most cut points land inside a record
