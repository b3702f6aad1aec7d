# Feeds random and mutated lines to firmware/cmdparse.py under the real `micropython` and
# reports what happened as "RESULT <name> <value>" lines (pytest reads them); a broken
# expectation prints "FAIL <what>". Usage: micropython tests/mpy/cmdparse_fuzz.py SEED COUNT
# Answers only: what a line costs the loop is tools/bench/cmdfuzz_timing.py's to measure.
import sys

from prng import Prng
from link_vectors import fields_for
from surepick.shared_fsm import link
from surepick.firmware import cmdparse
from checks import fail, finish, result, show_at_most

link.load_run_frame()    # every frame, as a board has them once a RUN came (CPython: at import)

REQUESTS = [t for t in sorted(link.SCHEMA.keys()) if link.is_request(t)]
BOARD = [t for t in sorted(link.SCHEMA.keys()) if not link.is_request(t)]
PRINTABLE = b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_abcdefghijklmnopqrstuvwxyz{|}~"
CATS = ("valid", "mutated", "echo", "text", "random", "overlong", "bad_fields", "version")


def with_crc(body):
    # a frame around any body, CRC correct: reaches the field checks
    import binascii
    return b"\x1e" + body + ("*%08X" % (binascii.crc32(body) & 0xFFFFFFFF)).encode()


def mutate(rng, line):
    # 1-3 edits anywhere after the RS: bit flip, byte replace, delete, insert, truncate
    b = bytes(line)
    for _ in range(1 + rng.below(3)):
        r = rng.below(5)
        i = 1 + rng.below(len(b) - 1)
        if r == 0:
            b = b[:i] + bytes([b[i] ^ (1 << rng.below(8))]) + b[i + 1:]
        elif r == 1:
            b = b[:i] + bytes([rng.below(256)]) + b[i + 1:]
        elif r == 2 and len(b) > 2:
            b = b[:i] + b[i + 1:]
        elif r == 3:
            b = b[:i] + bytes([rng.below(256)]) + b[i:]
        else:
            b = b[:i]
            if len(b) < 2:
                b = b + b"*"
    return b


def make(rng, cat):
    # -> (line without LF, expected fields or None)
    if cat == 0:
        t = rng.choice(REQUESTS)
        f = fields_for(rng, link, t)
        return link.encode(t, f)[:-1], (t, f)
    if cat == 1:
        t = rng.choice(REQUESTS)
        good = link.encode(t, fields_for(rng, link, t))[:-1]
        while True:
            m = mutate(rng, good)
            if m != good and m.rstrip(b"\r") != good:
                return m, None
    if cat == 2:
        t = rng.choice(BOARD)
        return link.encode(t, fields_for(rng, link, t))[:-1], None
    if cat == 3:
        n = rng.below(120)
        return bytes([rng.choice(PRINTABLE) for _ in range(n)]), None
    if cat == 4:
        raw = bytes([b for b in rng.raw(rng.below(300)) if b != 0x0A])
        if rng.chance(1, 2):
            raw = b"\x1e" + raw
        return raw, None
    if cat == 5:
        return b"\x1eSP1p," + bytes([rng.choice(PRINTABLE) for _ in range(260 + rng.below(400))]), None
    if cat == 6:
        t = rng.choice(REQUESTS)
        rid = 1 + rng.below(65535)
        kinds = link.SCHEMA[t][2]
        r = rng.below(3)
        if r == 0:  # one too many fields
            tail = ",1" * len(kinds)
        elif r == 1 and len(kinds) > 1:  # out of range second field
            tail = "," + str(link.KIND_HI[kinds[1]] + 1) if kinds[1] < link.K_TOK else ",a b"
        else:  # non-canonical number
            tail = ",007"
        return with_crc(("SP1%s,%d%s" % (chr(t), rid, tail)).encode()), rid
    return with_crc(b"SP2p,1"), None


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rng = Prng(seed)
    show_at_most(20)
    made = [0] * len(CATS)
    errors = {}
    exceptions = 0
    replies = 0
    silent = 0
    valid_lines = 0

    # the same lines also go, as one byte stream, through the line reader in random-sized
    # polls (fed line by line: the unix port's default heap is small)
    class Source:
        def __init__(self):
            self.data = b""
            self.i = 0

        def read_byte(self):
            if self.i >= len(self.data):
                return -1
            self.i += 1
            return self.data[self.i - 1]

    reader = cmdparse.LineReader()
    src = Source()
    got = 0
    resync_recovered = 0
    overlong_frames = 0

    for _ in range(count):
        cat = rng.below(len(CATS))
        line, expect = make(rng, cat)
        made[cat] += 1
        try:
            res = cmdparse.parse_line(line)
        except Exception as e:
            exceptions += 1
            fail("exception %r on %r" % (e, line))
            continue
        err, ftype, rid, args = res
        errors[err] = errors.get(err, 0) + 1
        if cmdparse.needs_reply(err):
            replies += 1
            if err != link.OK and cmdparse.error_reply(rid, err) is None:
                fail("no error reply for %r" % (line,))
        else:
            silent += 1
        if cat == 0:
            valid_lines += 1
            if err != link.OK or (ftype, (rid,) + args) != expect:
                fail("valid request rejected %r -> %r" % (line, res))
        elif err == link.OK:
            fail("cat %s accepted %r" % (CATS[cat], line))
        elif cat == 1 and not cmdparse.needs_reply(err):
            fail("mutant went unanswered %r" % (line,))
        elif cat == 2 and err != link.E_DIRECTION:
            fail("echo not recognised %r -> %d" % (line, err))
        elif cat == 3 and err != link.E_NOT_FRAME:
            fail("text answered %r -> %d" % (line, err))
        elif cat == 5 and err != link.E_TOO_LONG:
            fail("overlong not flagged %r" % (line,))
        elif cat == 6 and (err not in (link.E_FIELD_COUNT, link.E_RANGE, link.E_BAD_FIELD)
                           or rid != expect):
            fail("bad fields %r -> %r" % (line, res))
        elif cat == 7 and err != link.E_VERSION:
            fail("version %r -> %d" % (line, err))

        src.data = line + b"\n"
        src.i = 0
        seen = None
        try:
            while src.i < len(src.data):
                r = reader.poll(src.read_byte, 1 + rng.below(64))
                if r == cmdparse.LINE_READY:
                    e2, ftype, rid, args = cmdparse.parse_line(reader.line())
                    if e2 == link.OK:
                        seen = (ftype, (rid,) + args)
                elif r == cmdparse.LINE_OVERLONG:
                    overlong_frames += 1
        except Exception as e:
            exceptions += 1
            fail("reader exception %r" % (e,))
        if seen is not None:
            got += 1
            if cat != 0:
                # legit only as a resync: a frame after the last RS inside the line
                tail = line[line.rfind(b"\x1e"):]
                if link.decode(tail)[0] != link.OK:
                    fail("reader accepted %r" % (line,))
                else:
                    resync_recovered += 1
        if cat == 0 and seen != expect:
            fail("reader lost %r" % (line,))

    if got != valid_lines + resync_recovered:
        fail("reader recovered %d of %d valid requests" % (got, valid_lines))

    for i in range(len(CATS)):
        result("made_" + CATS[i], made[i])
    for k in sorted(errors.keys()):
        result("err_" + link.ERROR_NAMES[k], errors[k])
    result("lines", count)
    result("replies", replies)
    result("silent", silent)
    result("exceptions", exceptions)
    result("reader_resync_recovered", resync_recovered)
    result("reader_lines", reader.lines)
    result("reader_valid", got)
    result("reader_overlong", reader.overlong)
    result("reader_overlong_frames", overlong_frames)
    result("reader_resyncs", reader.resyncs)

    finish()


main()
