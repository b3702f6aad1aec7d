# Allocation-light encoder for the frames the loop sends all the time (TELEMETRY at 10 Hz, EVENT,
# FAULT): integer fields only, written digit by digit into one preallocated buffer. The bytes are
# exactly shared_fsm.link.encode()'s (a test compares them under micropython); link.encode builds
# strings and costs about 2 KB of heap per telemetry frame, which on the RP2040 means a GC pause
# inside the 2 ms loop every few seconds. This writer allocates two small memoryviews per frame
# (and a boxed int for a CRC above 2**30).
import binascii

from ..shared_fsm import link

_HEX = b"0123456789ABCDEF"


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

    def add(self, v):
        # one integer field; callers keep v inside the field's range (link.check would say)
        n = self.n
        if n + 13 > link.MAX_FRAME_LEN:
            self.ok = False
            return
        b = self.buf
        b[n] = 0x2C   # ,
        n += 1
        if v < 0:
            b[n] = 0x2D
            n += 1
            v = -v
        if v == 0:
            b[n] = 0x30
            n += 1
        else:
            d = self.digits
            k = 0
            while v:
                d[k] = 0x30 + v % 10
                v //= 10
                k += 1
            while k:
                k -= 1
                b[n] = d[k]
                n += 1
        self.n = n

    def finish(self):
        # -> memoryview of the whole frame (valid until the next begin), or None if too long
        if not self.ok:
            return None
        n = self.n
        crc = binascii.crc32(self.mv[1:n]) & 0xFFFFFFFF
        b = self.buf
        b[n] = 0x2A   # *
        i = 8
        while i:
            b[n + i] = _HEX[crc & 15]
            crc >>= 4
            i -= 1
        b[n + 9] = 0x0A
        self.n = n + 10
        return self.mv[:n + 10]
