# host/link/frames.py: REPL text passes through, frames come out decoded whatever the chunking,
# and garbage of every kind is counted without hiding the frames that follow it.
from hypothesis import given, settings, strategies as st

from surepick.host.link import frames
from surepick.shared_fsm import link

EVENT = link.event((3, 1000, 1, 2, 3, 4, 1, 23000, 1, 250, 0, 5))
TELEM = link.encode(link.T_TELEMETRY, (5, 2, 1, 0, 10, 2, 1, 9000, 120, 0, 1, 3, 5400, 0,
                                       2000, 900, 0))


def parse(data, chunk=None, **kw):
    text = []
    p = frames.FrameParser(on_text=text.append, **kw)
    out = []
    if chunk is None:
        out += p.feed(data)
    else:
        for i in range(0, len(data), chunk):
            out += p.feed(data[i:i + chunk])
    return out, b"".join(text), p


def test_text_passes_through_and_frames_come_out():
    data = b"MicroPython v1.22 on rp2\r\n>>> " + EVENT + b"boot ok\r\n" + TELEM.replace(b"\n", b"\r\n")
    for chunk in (None, 1, 2, 7, 64):
        out, text, p = parse(data, chunk)
        assert [f.ftype for f in out] == [link.T_EVENT, link.T_TELEMETRY]
        assert text == b"MicroPython v1.22 on rp2\r\n>>> boot ok\r\n"
        assert p.corrupt == 0 and p.frames == 2


def test_as_dict_names_the_fields():
    out, _, _ = parse(EVENT + link.reply(4, 0, ("pot_closed_counts", 8000)))
    d = frames.as_dict(out[0])
    assert d["type"] == "EVENT" and d["current_ma"] == 250 and d["present_mask"] == 5
    assert frames.as_dict(out[1]) == {"type": "REPLY", "req_id": 4, "code": 0,
                                      "payload": ["pot_closed_counts", 8000]}
    assert frames.frame_name(link.T_LOG) == "LOG" and frames.frame_name(0x59) == "0x59"


def test_garbage_is_counted_and_never_hides_the_next_frame():
    bad_crc = EVENT[:-2] + (b"0\n" if EVENT[-2:-1] != b"0" else b"1\n")
    data = (bad_crc + EVENT + EVENT[:20] + EVENT + b"\x1e" + b"q" * 5000 + EVENT
            + b"\x1e" + b"q" * 5000 + b"\n" + EVENT + bytes(range(256)) + EVENT)
    for chunk in (None, 1, 3, 100):
        out, _, p = parse(data, chunk)
        assert len(out) == 5, chunk
        assert p.errors == {link.E_CRC: 1, link.E_SYNTAX: 2, link.E_TOO_LONG: 2}
        assert p.overlong == 2 and p.truncated == 2 and p.corrupt == 5
        assert len(p._buf) <= link.MAX_FRAME_LEN + 2  # bounded while discarding


def test_echoed_requests_are_dropped_unless_asked_for():
    ping = link.request(link.T_PING, 9)
    out, _, p = parse(b">>> " + ping + EVENT)
    assert len(out) == 1 and p.echoed == 1
    out, _, p = parse(ping, accept_requests=True)
    assert out[0] == frames.Frame(link.T_PING, (9,))


def test_a_failing_text_callback_does_not_stop_parsing():
    def boom(_):
        raise RuntimeError("consumer bug")
    p = frames.FrameParser(on_text=boom)
    assert len(p.feed(b"text\n" + EVENT)) == 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(1, 50), st.randoms(use_true_random=False))
def test_any_garbage_then_a_frame_recovers_the_frame(garbage, chunk, rnd):
    data = garbage + EVENT + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(40))).replace(
        b"\x1e", b"") + TELEM
    out, _, p = parse(data, chunk)
    assert out[-2:] == [frames.Frame(link.T_EVENT, link.decode(EVENT)[2]),
                        frames.Frame(link.T_TELEMETRY, link.decode(TELEM)[2])]


def test_feed_accepts_bytearray_and_memoryview():
    p = frames.FrameParser()
    assert len(p.feed(bytearray(EVENT[:10])) + p.feed(memoryview(EVENT)[10:])) == 1
