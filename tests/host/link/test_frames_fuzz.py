# host/link/frames.py against a seeded stream of 5,000 (quick) / 100,000 (slow) random and mutated
# pieces: valid board frames, damaged frames, random bytes, REPL text, overlong and truncated
# frames, echoed requests. No exception; every valid frame recovered in order; the damage
# counted; REPL text that follows a frame passed through verbatim.
import random

import pytest

from surepick.host.link import frames
from surepick.shared_fsm import link

from tests.support import mpy as host_helpers  # noqa: E402

host_helpers.use_vectors()
import link_vectors  # noqa: E402
from prng import Prng  # noqa: E402

BOARD = sorted(t for t in link.SCHEMA if not link.is_request(t))
REQUESTS = sorted(t for t in link.SCHEMA if link.is_request(t))
TEXT = bytes(range(0x20, 0x7F))


def mutate(rng, line):
    # 1-3 edits strictly inside the frame (after RS, before LF); result differs from line
    body = bytearray(line[1:-1])
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(body))
        r = rng.randrange(4)
        if r == 0:
            body[i] ^= 1 << rng.randrange(8)
        elif r == 1 and len(body) > 1:
            del body[i]
        elif r == 2:
            body.insert(i, rng.randrange(256))
        else:
            body[i] = rng.randrange(256)
    out = b"\x1e" + bytes(body) + b"\n"
    # An inserted RS resyncs the parser: what follows it may still be the intact frame.
    if link.decode(out[out.rfind(b"\x1e"):])[0] == link.OK:
        return b"\x1eSP1\n"
    return out if out != line and out != line.replace(b"\n", b"\r\n") else b"\x1eSP1\n"


def build(seed, pieces):
    rng = random.Random(seed)
    gen = Prng(seed)
    stream = []
    expected = []
    texts = []  # text pieces the parser must pass through verbatim
    known_bad = 0
    echoes = 0
    state_text = True  # does the parser sit in text state before this piece?
    for _ in range(pieces):
        r = rng.random()
        if r < 0.35 or (r >= 0.9 and r < 0.95):
            t = rng.choice(BOARD)
            fields = link_vectors.fields_for(gen, link, t)
            line = link.encode(t, fields)
            if line is None:
                continue
            if rng.random() < 0.3:
                line = line.replace(b"\n", b"\r\n")
            stream.append(line)
            expected.append(frames.Frame(t, fields))
            state_text = True
        elif r < 0.55:
            t = rng.choice(BOARD)
            line = link.encode(t, link_vectors.fields_for(gen, link, t))
            if line is None:
                continue
            stream.append(mutate(rng, line))
            known_bad += 1
            state_text = True if stream[-1].endswith(b"\n") else False
        elif r < 0.65:
            stream.append(bytes(rng.getrandbits(8) for _ in range(rng.randrange(300))))
            state_text = False
        elif r < 0.75:
            text = bytes(rng.choice(TEXT) for _ in range(rng.randrange(80))) + b"\r\n"
            stream.append(text)
            if state_text:
                texts.append(text)
        elif r < 0.8:
            stream.append(b"\x1e" + bytes(rng.choice(TEXT) for _ in range(rng.randrange(300, 3000)))
                          + (b"\n" if rng.random() < 0.5 else b""))
            known_bad += 1
            state_text = False
        elif r < 0.85:
            t = rng.choice(BOARD)
            line = link.encode(t, link_vectors.fields_for(gen, link, t))
            if line is None:
                continue
            stream.append(line[:rng.randrange(1, len(line) - 1)])  # truncated: no LF
            known_bad += 1
            state_text = False
        elif r < 0.9:
            t = rng.choice(REQUESTS)
            line = link.encode(t, link_vectors.fields_for(gen, link, t))
            if line is None:
                continue
            stream.append(line)
            echoes += 1
            state_text = True
        else:
            stream.append(b"\x1e" * rng.randrange(1, 4))
            known_bad += 1
            state_text = False
    return b"".join(stream), expected, texts, known_bad, echoes


def run(seed, pieces):
    data, expected, texts, known_bad, echoes = build(seed, pieces)
    rng = random.Random(seed + 1)
    text = []
    p = frames.FrameParser(on_text=text.append)
    got = []
    i = 0
    while i < len(data):
        n = rng.choice((1, 2, 5, 17, 64, 512, 4096))
        got += p.feed(data[i:i + n])
        i += n
    assert got == expected
    assert p.frames == len(expected) and p.echoed == echoes
    assert p.corrupt >= known_bad
    assert p.overlong >= 1 and p.truncated >= 1
    passed = b"".join(text)
    at = 0
    for t in texts:
        at = passed.find(t, at)
        assert at >= 0, t
        at += len(t)
    return len(data), len(expected), p


def test_frames_fuzz_5k_pieces():
    size, n, p = run(7, 5000)
    assert n > 1500


@pytest.mark.slow
def test_frames_fuzz_100k_pieces():
    size, n, p = run(20240601, 100000)
    assert n > 35000
    print("\n%d bytes, %d frames recovered, stats %s" % (size, n, p.stats()))
