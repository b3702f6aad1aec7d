# firmware/cmdparse.py on CPython: which input gets a request, an error reply or silence, and
# how the line reader copes with REPL text, CRLF, overlong lines and frames after garbage.
import binascii
import os

from surepick.firmware import cmdparse
from surepick.shared_fsm import link

from tests.support import mpy as host_helpers  # noqa: E402
from tests.support.rp2_machine import stand_in_dir


def crc_frame(body):
    return b"\x1e" + body + b"*%08X" % (binascii.crc32(body) & 0xFFFFFFFF)


def test_valid_request_gives_type_id_and_args():
    line = link.job(12, (150000, 0, 20000, -90000), (0, 200000, 30000, -90000), 25000, 3)
    assert cmdparse.parse_line(line) == (link.OK, link.T_JOB, 12,
                                         (150000, 0, 20000, -90000, 0, 200000, 30000, -90000,
                                          25000, 3))
    assert cmdparse.parse_line(link.request(link.T_PING, 1)[:-1]) == (link.OK, link.T_PING, 1, ())


def test_silence_for_repl_text_and_echoes_of_board_frames():
    for line in (b"", b">>> import main", b"Traceback (most recent call last):",
                 link.event((1,) * 8 + (0,) * 4), link.reply(3, 0)):
        err, *_ = cmdparse.parse_line(line)
        assert not cmdparse.needs_reply(err), line


def test_error_replies_carry_the_request_id_when_the_crc_is_good():
    err, ftype, rid, args = cmdparse.parse_line(crc_frame(b"SP1w,77,pot_closed_counts,x"))
    assert (err, ftype, rid, args) == (link.E_BAD_FIELD, link.T_CONFIG_SET, 77, None)
    reply = cmdparse.error_reply(rid, err)
    assert link.decode(reply) == (link.OK, link.T_REPLY, (77, link.E_BAD_FIELD))
    # damaged CRC: the id cannot be trusted, the reply goes to request 0
    good = link.request(link.T_ABORT, 77)
    bad = good[:6] + b"8" + good[7:]
    err, _, rid, _ = cmdparse.parse_line(bad)
    assert err == link.E_CRC and rid == 0 and cmdparse.needs_reply(err)


def feed(reader, data):
    out = []
    for b in data:
        r = reader.push(b)
        if r == cmdparse.LINE_READY:
            out.append(bytes(reader.line()))
        elif r == cmdparse.LINE_OVERLONG:
            out.append("OVERLONG")
    return out


def test_line_reader_resyncs_on_rs_and_bounds_the_buffer():
    ping = link.request(link.T_PING, 5)
    r = cmdparse.LineReader()
    data = b">>> partial prompt" + ping + b"\x1eSP1p,9*trunc" + ping.replace(b"\n", b"\r\n")
    data += b"\x1e" + b"x" * 600 + b"\n" + b"y" * 600 + b"\n" + ping
    out = feed(r, data)
    assert out == [ping[:-1], ping[:-1] + b"\r", "OVERLONG", ping[:-1]]
    assert r.resyncs == 2 and r.overlong == 2  # the long text line is dropped silently
    assert len(r.buf) == link.MAX_FRAME_LEN + 1
    assert cmdparse.parse_line(out[1])[0] == link.OK


def test_line_reader_accepts_the_longest_frame_with_crlf():
    longest = link.encode(link.T_CONFIG_SET, (65535, "k" * link.MAX_TOKEN_LEN, -(1 << 30)))
    body = b"SP1w,1," + b"a" * (link.MAX_FRAME_LEN - 17)
    exact = crc_frame(body)
    assert len(exact) == link.MAX_FRAME_LEN
    r = cmdparse.LineReader()
    longer = crc_frame(body + b"a")  # one byte more
    out = feed(r, longest + exact + b"\r\n" + longer + b"\n" + longer + b"\r\n")
    assert cmdparse.parse_line(out[0])[0] == link.OK
    assert cmdparse.parse_line(out[1])[0] == link.E_FIELD_COUNT  # reached the field checks
    assert cmdparse.parse_line(out[2])[0] == link.E_TOO_LONG  # fits the buffer, not the limit
    assert out[3] == "OVERLONG"  # does not fit the buffer


def test_poll_reads_at_most_max_bytes_per_call():
    class Source:
        def __init__(self, data):
            self.data, self.reads = data, 0

        def read_byte(self):
            if self.reads >= len(self.data):
                return -1
            self.reads += 1
            return self.data[self.reads - 1]

    ping = link.request(link.T_PING, 5)
    src = Source(ping * 2)
    r = cmdparse.LineReader()
    results = []
    for _ in range(20):
        before = src.reads
        results.append(r.poll(src.read_byte, 4))
        assert src.reads - before <= 4
    assert results.count(cmdparse.LINE_READY) == 2


def test_the_pico_hal_reads_requests_from_stdin_under_micropython(tmp_path):
    # The HAL's console_read_byte and LineReader.poll as the board runs them, on a real stdin pipe.
    if host_helpers.micropython() is None:
        import pytest
        pytest.skip("no micropython")
    import subprocess
    import time
    proc = subprocess.Popen(host_helpers.command("cmdparse_stdin.py"), cwd=str(host_helpers.ROOT),
                            env=host_helpers.env([stand_in_dir(tmp_path)]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.3)  # the loop idles meanwhile
    for chunk in (b">>> junk\r\n", link.request(link.T_PING, 7)[:9],
                  link.request(link.T_PING, 7)[9:], b"\x1e" + b"z" * 400 + b"\n",
                  link.request(link.T_CONFIG_GET, 8, ("rail_mv",)),
                  crc_frame(b"SP1k,9,2") + b"\n", link.request(link.T_PING, 65535)):
        proc.stdin.write(chunk)
        proc.stdin.flush()
        time.sleep(0.02)
    out, err = proc.communicate(timeout=20)
    lines = out.decode().splitlines()
    assert lines[:4] == ["REQ PING 7 ", "ERR TOO_LONG 0", "REQ CONFIG_GET 8 rail_mv",
                         "ERR RANGE 9"], (lines, err)
    assert lines[4] == "REQ PING 65535 "
    # kept looping while no byte was there (a blocking read would never come back empty)
    assert int(lines[5].split()[1]) > 0, lines
