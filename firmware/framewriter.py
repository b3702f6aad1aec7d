# Allocation-light encoder for the frames the loop sends all the time (TELEMETRY at 10 Hz, EVENT,
# FAULT): integer fields only, written digit by digit into one preallocated buffer. The bytes are
# exactly shared_fsm.link.encode()'s (a test compares them under micropython); link.encode builds
# strings and costs about 2 KB of heap per telemetry frame, which on the RP2040 means a GC pause
# inside the 2 ms loop every few seconds. This writer allocates two small memoryviews per frame
# (and a boxed int for a CRC above 2**30). The digit and hex loops are viper code on the board
# (machine integers: a TELEMETRY frame's 24 fields in Python bytecode took 1.6-2.2 ms on an
# RP2040, most of a 2 ms period); elsewhere they run as plain Python with the same results.
import binascii

from ..shared_fsm import link
from ..shared_fsm.compat import const, micropython

_HEX = b"0123456789ABCDEF"
_LIMIT = const(243)          # link.MAX_FRAME_LEN - 13: room for one more field of up to 12 bytes

try:
    ptr8                     # a cast only inside viper functions on MicroPython
except NameError:
    def ptr8(buf):           # elsewhere (CPython, bytecode): the buffer itself
        return buf


class FrameWriter:
    def __init__(self):
        self.buf = bytearray(link.MAX_FRAME_LEN + 2)
        self.mv = memoryview(self.buf)
        self.n = 0
        self.digits = bytearray(12)
        self.ok = True

    def begin(self, ftype):
        b = self.buf
        b[0] = 0x1E
        b[1] = 0x53   # S
        b[2] = 0x50   # P
        b[3] = 0x31   # 1
        b[4] = ftype
        self.n = 5
        self.ok = True

    @micropython.viper
    def add(self, v: int):
        # One integer field; callers keep v inside the field's range (link.check would say).
        # Viper on the board: machine integers (a frame's fields are at most 31 bits), and v
        # is made non-negative before the digit loop, so % and // are Python's.
        n = int(self.n)
        if n > _LIMIT:
            self.ok = False
            return
        b = ptr8(self.buf)
        b[n] = 0x2C   # ,
        n += 1
        if v < 0:
            b[n] = 0x2D
            n += 1
            v = 0 - v
        if v == 0:
            b[n] = 0x30
            n += 1
        else:
            d = ptr8(self.digits)
            k = 0
            while v:
                d[k] = 0x30 + v % 10
                v = v // 10
                k += 1
            while k:
                k -= 1
                b[n] = d[k]
                n += 1
        self.n = n

    @micropython.viper
    def add_ints(self, vals, count: int):
        # The first `count` ints of an array("i") as fields, exactly as add() writes each: one
        # viper call for a whole EVENT record (twelve add() calls cost ~0.4 ms on an RP2040).
        b = ptr8(self.buf)
        d = ptr8(self.digits)
        n = int(self.n)
        i = 0
        while i < count:
            if n > _LIMIT:
                self.ok = False
                return
            v = int(vals[i])      # a Python subscript: ptr32 would read the sign bit as a value
            b[n] = 0x2C   # ,
            n += 1
            if v < 0:
                b[n] = 0x2D
                n += 1
                v = 0 - v
            if v == 0:
                b[n] = 0x30
                n += 1
            else:
                k = 0
                while v:
                    d[k] = 0x30 + v % 10
                    v = v // 10
                    k += 1
                while k:
                    k -= 1
                    b[n] = d[k]
                    n += 1
            i += 1
        self.n = n

    @micropython.viper
    def _hex8(self, n: int, hi: int, lo: int):
        # "*" and the CRC (hi, lo: its 16-bit halves) as 8 upper-case hex digits, then LF, at n
        b = ptr8(self.buf)
        h = ptr8(_HEX)
        b[n] = 0x2A   # *
        i = 8
        while i > 4:
            b[n + i] = h[lo & 15]
            lo = lo >> 4
            i -= 1
        while i:
            b[n + i] = h[hi & 15]
            hi = hi >> 4
            i -= 1
        b[n + 9] = 0x0A

    def finish(self):
        # -> memoryview of the whole frame (valid until the next begin), or None if too long
        if not self.ok:
            return None
        n = self.n
        crc = binascii.crc32(self.mv[1:n])
        self._hex8(n, (crc >> 16) & 0xFFFF, crc & 0xFFFF)
        self.n = n + 10
        return self.mv[:n + 10]
