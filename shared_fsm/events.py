# A preallocated ring of event records written by the state machine on every transition, fault
# and note. The firmware, simulator and host read it by sequence number. Writing never allocates.
from array import array

from .compat import const
from .codes import K_SEARCH

# Field order of one record: the link protocol and the flash log use the same 12 ints.
SEQ = const(0)
T_MS = const(1)
KIND = const(2)
FROM = const(3)
TO = const(4)
REASON = const(5)
ATTEMPT = const(6)
POT = const(7)
SWITCH = const(8)
CURRENT = const(9)
BEAM = const(10)
PRESENT = const(11)
N_FIELDS = const(12)
FIELD_NAMES = ("seq", "t_ms", "kind", "from", "to", "reason", "attempt",
               "pot_counts", "switch_pressed", "current_ma", "beam_broken", "present_mask")


class EventRing:
    def __init__(self, capacity=64):
        self.capacity = capacity
        self.buf = array("i", [0] * (capacity * N_FIELDS))
        self.next_seq = 1  # sequence number the next record gets; seq 0 means "none yet"

    def put(self, m, kind, frm, to, reason):
        # Called by the machine `m`: time, attempt, readings and the check mask come from it.
        # Few arguments and locals on purpose: MicroPython puts a frame of more than 11 locals
        # and stack slots on the heap, and on the chip finding room for it right after a
        # collection took 0.6 ms of a tick (docs/rp2040.md, heap on the chip).
        base = (self.next_seq % self.capacity) * N_FIELDS
        self.buf[base] = self.next_seq
        self.buf[base + 1] = m.now
        self.buf[base + 2] = kind
        self.buf[base + 3] = frm
        self.buf[base + 4] = to
        self.buf[base + 5] = reason
        self.buf[base + 6] = m.attempt
        self.buf[base + 7] = m.inp.pot_counts
        self.buf[base + 8] = m.inp.switch_pressed
        self.buf[base + 9] = m.inp.current_ma
        self.buf[base + 10] = m.inp.beam_broken
        self.buf[base + 11] = m.present
        self.next_seq += 1

    def put_search(self, m, reason, x_um, y_um, z_um, value):
        # A part search's step (codes.K_SEARCH): where (x, y, z um) and a value whose meaning
        # the reason gives (codes.R_SEARCH ...).
        self.put_data(m, K_SEARCH, reason, x_um, y_um, z_um, value)

    def put_data(self, m, kind, reason, x, y, z, value):
        # A record that carries three numbers and a value instead of readings (K_SEARCH, K_RUN):
        # the machine's state both ways, then x, y, z, the beam as read now and the value. The
        # same 12 ints, so the link and the flash log carry it as is.
        base = (self.next_seq % self.capacity) * N_FIELDS
        b = self.buf
        b[base] = self.next_seq
        b[base + 1] = m.now
        b[base + 2] = kind
        b[base + 3] = m.state
        b[base + 4] = m.state
        b[base + 5] = reason
        b[base + 6] = m.attempt
        b[base + 7] = x
        b[base + 8] = y
        b[base + 9] = z
        b[base + 10] = m.inp.beam_broken
        b[base + 11] = value
        self.next_seq += 1

    def last_seq(self):
        return self.next_seq - 1

    def oldest_seq(self):
        first = self.next_seq - self.capacity
        return first if first > 1 else 1

    def copy(self, seq, out):
        # The record's N_FIELDS ints into `out` (one call instead of one per field; no allocation).
        base = (seq % self.capacity) * N_FIELDS
        b = self.buf
        for i in range(N_FIELDS):
            out[i] = b[base + i]

    def get(self, seq):
        # The record as a tuple, or None if it was overwritten or not written yet.
        if seq < self.oldest_seq() or seq >= self.next_seq:
            return None
        base = (seq % self.capacity) * N_FIELDS
        return tuple(self.buf[base:base + N_FIELDS])

    def since(self, seq):
        # Records with a sequence number above `seq` still in the ring, oldest first.
        out = []
        s = seq + 1
        if s < self.oldest_seq():
            s = self.oldest_seq()
        while s < self.next_seq:
            out.append(self.get(s))
            s += 1
        return out
