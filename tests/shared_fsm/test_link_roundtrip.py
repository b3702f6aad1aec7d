# The link protocol on CPython: every frame type round-trips, encodings are canonical, and
# decode() classifies bad input with the right error code instead of raising.
import binascii
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from surepick.shared_fsm import link

from tests.support import mpy as host_helpers  # noqa: E402

host_helpers.use_vectors()
import link_vectors  # noqa: E402

ALL_TYPES = sorted(link.SCHEMA)


def frame(body):
    # any body with a correct CRC: reaches the field checks
    return b"\x1e" + body + b"*%08X\n" % (binascii.crc32(body) & 0xFFFFFFFF)


def extreme(ftype, high):
    # every field at its lowest/highest value, tokens at their longest, all optional fields
    out = []
    for kind in link.SCHEMA[ftype][2]:
        if kind >= link.K_TOK:
            out.append(("Z" if high else "a") * link.MAX_TOKEN_LEN)
        else:
            out.append(link.KIND_HI[kind] if high else link.KIND_LO[kind])
    return tuple(out)


def test_type_letters_say_the_direction():
    for t, (name, least, kinds, names) in link.SCHEMA.items():
        assert len(kinds) == len(names) and 1 <= least <= len(kinds)
        if link.is_request(t):
            assert chr(t).islower() and names[0] == "req_id" and kinds[0] == link.K_RID, name
        else:
            assert chr(t).isupper(), name
    for reserved in b"YZz":       # X, x, y: the HIL frames
        assert reserved not in link.SCHEMA


def test_event_and_log_carry_the_12_int_event_record():
    rec = (41, 123456, 2, 3, 4, 17, 2, 23000, 1, 310, 0, 0b1011)
    assert link.decode(link.event(rec)) == (link.OK, link.T_EVENT, rec)
    assert link.decode(link.log_record(9001, 2, rec)) == (link.OK, link.T_LOG, (9001, 2) + rec)
    assert link.SCHEMA[link.T_EVENT][3] == link.EVENT_FIELDS and len(link.EVENT_FIELDS) == 12


@pytest.mark.parametrize("ftype", ALL_TYPES, ids=lambda t: link.SCHEMA[t][0])
@pytest.mark.parametrize("high", [False, True])
def test_extremes_fit_in_one_frame_and_round_trip(ftype, high):
    fields = extreme(ftype, high)
    line = link.encode(ftype, fields)
    assert line is not None and len(line) - 1 <= link.MAX_FRAME_LEN
    assert link.decode(line) == (link.OK, ftype, fields)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_vectors_round_trip_and_are_canonical(seed):
    valid = 0
    for ftype, fields in link_vectors.vectors(link, seed, 600):
        line = link.encode(ftype, fields)
        if line is None:
            assert link.check(ftype, fields) != link.OK
            continue
        valid += 1
        err, t, got = link.decode(line)
        assert (err, t, got) == (link.OK, ftype, tuple(fields))
        assert link.encode(t, got) == line  # one encoding per frame
        assert link.decode(line.replace(b"\n", b"\r\n")) == (err, t, got)  # CRLF from the board
        assert link.decode(line[:-1]) == (err, t, got)
    assert valid > 450


def test_convenience_encoders():
    assert link.decode(link.hello("pico-01", "0.1.0", 1, 7, 120)) == (
        link.OK, link.T_HELLO, ("pico-01", "0.1.0", link.PROTOCOL_VERSION, 1, 7, 120, 0))
    # what the boot rejected from flash: a count (capped at 255) and the first item
    assert link.decode(link.hello("pico-01", "0.1.0", 1, 7, 120, 300, ("config", "wdt_ms", "range"))) == (
        link.OK, link.T_HELLO, ("pico-01", "0.1.0", link.PROTOCOL_VERSION, 1, 7, 120, 255, "config",
                                "wdt_ms", "range"))
    # a HELLO of an older firmware (six fields) still decodes
    old = link.encode(link.T_HELLO, ("pico-01", "0.1.0", link.PROTOCOL_VERSION, 1, 7, 120))
    assert link.decode(old)[0] == link.OK
    j = link.job(5, (150000, -2000, 20000, -90000), (0, 200000, 30000, -90000), 25000)
    assert link.decode(j) == (link.OK, link.T_JOB, (5, 150000, -2000, 20000, -90000, 0, 200000,
                                                    30000, -90000, 25000))
    assert link.decode(link.job(5, (1, 2, 3, 4), (5, 6, 7, 8), 9, 3))[2][-1] == 3
    assert link.job(5, (1, 2, 3), (5, 6, 7, 8), 9) is None
    assert link.decode(link.reply(5, link.E_BUSY)) == (link.OK, link.T_REPLY, (5, link.E_BUSY))
    assert link.decode(link.request(link.T_CALIBRATE, 65535, (link.CAL_CURRENT,)))[0] == link.OK
    assert link.request(link.T_HELLO, 1) is None  # not a request type


@pytest.mark.parametrize("ftype,fields,code", [
    (link.T_PING, (0,), link.E_RANGE),                      # request ids start at 1
    (link.T_PING, (65536,), link.E_RANGE),
    (link.T_PING, (), link.E_FIELD_COUNT),
    (link.T_PING, (1, 2), link.E_FIELD_COUNT),
    (link.T_EVENT, (1,) * 11, link.E_FIELD_COUNT),
    (link.T_EVENT, (1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 2, 0), link.E_RANGE),  # beam is a bit (switch's field
    # also carries a search step's y_um: docs/protocol.md)
    (link.T_CONFIG_GET, (1, "12"), link.E_BAD_FIELD),        # int-looking token
    (link.T_CONFIG_GET, (1, "a b"), link.E_BAD_FIELD),
    (link.T_CONFIG_GET, (1, "x" * 25), link.E_BAD_FIELD),
    (link.T_CONFIG_GET, (1, "caf\u00e9"), link.E_BAD_FIELD),
    (link.T_CONFIG_SET, (1, "k", "v"), link.E_BAD_FIELD),   # value is an integer
    (link.T_JOB, (1, 0, 0, 0, 0, 0, 0, 0, 0, 0), link.E_RANGE),  # zero width
    (link.T_JOB, (1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 10), link.E_RANGE),
    (0x59, (1,), link.E_UNKNOWN_TYPE),                      # reserved Y
])
def test_encode_refuses_what_decode_would_reject(ftype, fields, code):
    assert link.check(ftype, fields) == code
    assert link.encode(ftype, fields) is None
    if ftype in link.SCHEMA:
        body = ("SP1" + chr(ftype) + "".join("," + str(v) for v in fields)).encode("utf-8")
        assert link.decode(frame(body))[0] == code


def test_reply_payload_limits():
    assert link.reply(1, 0, ("a",) * link.MAX_PAYLOAD) is not None
    assert link.reply(1, 0, ("a",) * (link.MAX_PAYLOAD + 1)) is None
    big = link.reply(1, 0, ["x" * link.MAX_TOKEN_LEN] * link.MAX_PAYLOAD)
    assert big is not None and len(big) - 1 <= link.MAX_FRAME_LEN


@pytest.mark.parametrize("line,code", [
    (b"", link.E_NOT_FRAME),
    (b">>> print(1)\r\n", link.E_NOT_FRAME),
    (b"SP1p,1*00000000\n", link.E_NOT_FRAME),
    (b"\x1e" + b"A" * 300 + b"\n", link.E_TOO_LONG),
    (b"\x1eSP1p,1\n", link.E_SYNTAX),
    (b"\x1eSP1p,1*1234567\n", link.E_SYNTAX),
    (None, link.E_NOT_FRAME),
    ("\x1eSP1p,1*00000000", link.E_NOT_FRAME),  # str, not bytes
])
def test_decode_framing_errors(line, code):
    assert link.decode(line)[0] == code


def test_decode_field_errors_after_a_good_crc():
    assert link.decode(frame(b"SP2p,1"))[0] == link.E_VERSION
    assert link.decode(frame(b"XX1p,1"))[0] == link.E_SYNTAX
    assert link.decode(frame(b"SP1?,1"))[0] == link.E_UNKNOWN_TYPE
    assert link.decode(frame(b"SP1p1"))[0] == link.E_SYNTAX
    for bad in (b"01", b"-0", b"+1", b" 1", b"1_0", b"0x1", b"", b"1.0", b"\xd9\xa3"):
        assert link.decode(frame(b"SP1l,1," + bad))[0] == link.E_BAD_FIELD, bad
    assert link.decode(frame(b"SP1l,1,1073741824"))[0] == link.E_RANGE
    assert link.decode(frame(b"SP1l,1,99999999999"))[0] == link.E_RANGE
    assert link.decode(frame(b"SP1l,1,999999999999"))[0] == link.E_BAD_FIELD  # > 11 chars
    good = link.request(link.T_LOG_SINCE, 1, (5,))
    assert link.decode(good[:-2] + bytes([good[-2] ^ 1]) + b"\n")[0] == link.E_CRC
    assert link.decode(good.lower())[0] in (link.E_CRC, link.E_NOT_FRAME)


def test_direction_filter_and_request_id_recovery():
    echo = link.event((1,) * 8 + (0,) * 4)
    assert link.decode(echo, requests=True)[0] == link.E_DIRECTION
    assert link.decode(echo, requests=False)[0] == link.OK
    assert link.decode(link.request(link.T_PING, 3), requests=False)[0] == link.E_DIRECTION
    assert link.request_id_of(frame(b"SP1w,4242,key,12,13")) == 4242
    assert link.request_id_of(frame(b"SP1w,0,key,12")) == 0
    assert link.request_id_of(b"\x1eSP1w,4242,key,12*00000000") == 0  # CRC bad: not trusted
    assert link.request_id_of(frame(b"SP1R,4242,0")) == 0  # not a request


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_decode_never_raises_on_bytes(data):
    err, ftype, fields = link.decode(data)
    assert err in link.ERROR_NAMES
    assert (err == link.OK) == (fields is not None)
    assert isinstance(link.request_id_of(data), int)


@st.composite
def valid_frame(draw):
    ftype = draw(st.sampled_from(ALL_TYPES))
    _, least, kinds, _ = link.SCHEMA[ftype]
    n = draw(st.integers(least, len(kinds)))
    token = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-",
                    min_size=1, max_size=link.MAX_TOKEN_LEN).filter(
        lambda s: not s.lstrip("-").isdigit() or s == "-")
    fields = []
    for kind in kinds[:n]:
        if kind == link.K_TOK:
            fields.append(draw(token))
        elif kind == link.K_ANY:
            fields.append(draw(st.one_of(token, st.integers(-(1 << 31), (1 << 31) - 1))))
        else:
            fields.append(draw(st.integers(link.KIND_LO[kind], link.KIND_HI[kind])))
    return ftype, tuple(fields)


@settings(max_examples=500, deadline=None)
@given(valid_frame(), st.data())
def test_round_trip_property_and_single_byte_damage_is_caught(tf, data):
    ftype, fields = tf
    line = link.encode(ftype, fields)
    if line is None:  # only when the frame would exceed MAX_FRAME_LEN
        assert len("".join(str(f) for f in fields)) + len(fields) + 14 > link.MAX_FRAME_LEN
        return
    assert link.decode(line) == (link.OK, ftype, fields)
    i = data.draw(st.integers(1, len(line) - 2))
    flip = data.draw(st.integers(1, 255))
    damaged = line[:i] + bytes([line[i] ^ flip]) + line[i + 1:]
    assert link.decode(damaged)[0] != link.OK


def test_protocol_doc_matches_the_code():
    doc = (host_helpers.ROOT / "docs" / "protocol.md").read_text()
    for example in ("\\x1eSP1p,7*9E212D04\\n", "\\x1eSP1E,1,2,3,4,5,6,7,8,1,-10,0,3*1EBC9026\\n"):
        assert example in doc
        line = example.replace("\\x1e", "\x1e").replace("\\n", "\n").encode()
        assert link.decode(line)[0] == link.OK
    rows = {line.split("|")[2].strip(): line for line in doc.splitlines()
            if line.startswith("| `")}
    for t, (name, _, _, names) in link.SCHEMA.items():
        row = rows[name]
        assert "`%s`" % chr(t) in row
        at = 0
        for field in names:
            if field in ("req_id", "payload") or name == "LOG":
                continue
            at = row.find(field, at)
            assert at >= 0, (name, field)  # listed, in order
    for code, name in link.ERROR_NAMES.items():
        assert "| %d | %s |" % (code, name) in doc
