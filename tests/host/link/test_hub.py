# The link hub (host/link/hub.py) between real sockets: the "board" is a loopback TCP server this
# test plays by hand (it reads what the hub forwards and answers in the order it chooses), the
# clients are LinkClients through the hub's Unix socket, the raw console is the hub's real pty.
import os
import select
import stat
import threading
import time

import pytest

from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.host.link.errors import ConsoleLent, Disconnected, LinkError
from surepick.host.link.frames import FrameParser
from surepick.host.link.hub import BoardLines, Hub, swap_first_field
from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.status import BoardStatus
from surepick.shared_fsm import link

from tests.support.hand_board import HandBoard
from tests.support.hub_serving import Serving


@pytest.fixture
def served(hub_rundir):
    board = HandBoard()
    t = threading.Thread(target=board.accept)
    t.start()
    s = Serving(board.port)
    t.join(5)
    assert board.conn is not None
    yield board, s
    s.close()
    board.close()


def client(port, **kw):
    return LinkClient(port, name="test", **kw).open()


def answer_in_background(c, ftype, args=(), collect=()):
    box = {}

    def go():
        try:
            box["reply"] = c.request(ftype, args, 5.0, collect=collect)
        except Exception as e:  # handed to the test thread
            box["error"] = e
    t = threading.Thread(target=go)
    t.start()
    return t, box


def test_replies_reach_the_client_that_asked_whatever_the_order(served):
    board, _ = served
    a, b = client(board.port), client(board.port)
    assert a.via_hub and b.via_hub
    # Both clients number their first request 1; the board sees two different ids.
    ta, box_a = answer_in_background(a, link.T_CONFIG_GET, ("telemetry_hz",))
    (fa, xa), = board.requests(1)
    tb, box_b = answer_in_background(b, link.T_CONFIG_GET, ("wdt_ms",))
    (fb, xb), = board.requests(1)
    assert fa == fb == link.T_CONFIG_GET and xa[1] == "telemetry_hz" and xb[1] == "wdt_ms"
    assert xa[0] != xb[0]
    # The board answers the second request first, and sends telemetry in between.
    board.send(link.reply(xb[0], link.OK, ("wdt_ms", 5000)))
    board.send(link.encode(link.T_TELEMETRY, (7,) + (0,) * 16))
    board.send(link.reply(xa[0], link.OK, ("telemetry_hz", 10)))
    ta.join(5)
    tb.join(5)
    assert box_a["reply"].req_id == 1 and box_a["reply"].payload == ("telemetry_hz", 10)
    assert box_b["reply"].req_id == 1 and box_b["reply"].payload == ("wdt_ms", 5000)
    a.close()
    b.close()


def test_log_records_go_with_their_reply_and_events_to_everyone(served):
    board, _ = served
    seen = {"a": [], "b": []}
    a = client(board.port, on_frame=seen["a"].append)
    b = client(board.port, on_frame=seen["b"].append)
    t, box = answer_in_background(a, link.T_LOG_SINCE, (0,), collect=(link.T_LOG,))
    (_, fields), = board.requests(1)
    rec = (1, 2, 3, 4, 5, 6, 7, 8, 1, 10, 0, 3)
    board.send(link.event(rec))
    board.send(link.log_record(1, 1, rec) + link.log_record(2, 2, rec))
    board.send(link.reply(fields[0], link.OK, (2, 2, 0, 1, 5)))
    t.join(5)
    r = box["reply"]
    assert [f.fields[0] for f in r.frames] == [1, 2] and r.payload == (2, 2, 0, 1, 5)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not any(f.ftype == link.T_EVENT for f in seen["b"]):
        b.pump(0.05)
    assert [f.fields for f in seen["b"] if f.ftype == link.T_EVENT] == [rec]
    assert not [f for f in seen["b"] if f.ftype in (link.T_LOG, link.T_REPLY)]   # not b's
    a.close()
    b.close()


def test_only_whole_request_frames_reach_the_board(served):
    board, s = served
    stream = hub_client.HubStream(board.port, "raw-bytes test")
    # REPL text, a Ctrl-C, a frame with a bad CRC, a board->host frame, then one good request.
    stream.write(b"import os\r\n\x03\x03")
    stream.write(b"\x1eSP1p,5*00000000\n")
    stream.write(link.reply(3, link.OK))
    stream.write(link.request(link.T_PING, 9))
    (ftype, fields), = board.requests(1)
    assert ftype == link.T_PING
    time.sleep(0.2)
    board.conn.setblocking(False)
    try:
        rest = board.conn.recv(4096)
    except BlockingIOError:
        rest = b""
    assert rest == b"" and bytes(board.got) == b""     # nothing else came through
    stream.close()


def test_the_raw_console_is_lent_and_returned(served):
    board, s = served
    notes = []
    c = client(board.port, on_notice=lambda e, t: notes.append(e))
    raw = c.ser.info["raw"]
    assert stat.S_IMODE(os.stat(raw).st_mode) == 0o600
    fd = os.open(raw, os.O_RDWR | os.O_NOCTTY)
    try:
        deadline = time.monotonic() + 3
        while c.lent_to is None and time.monotonic() < deadline:
            c.pump(0.05)
        assert c.lent_to is not None and "lent" in notes
        with pytest.raises(ConsoleLent, match="lent to"):
            c.request(link.T_PING, (), 1.0)
        # Raw bytes both ways, untouched (Ctrl-C included).
        os.write(fd, b"\x03\x01print(1)\x04")
        got = b""
        board.conn.settimeout(3)
        while len(got) < 10:
            got += board.conn.recv(100)
        assert got == b"\x03\x01print(1)\x04"
        board.send(b"OK1\r\n\x04>")
        back = b""
        end = time.monotonic() + 3
        while len(back) < 7 and time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                back += os.read(fd, 100)
        assert back == b"OK1\r\n\x04>"
    finally:
        os.close(fd)
    deadline = time.monotonic() + 3
    while c.lent_to is not None and time.monotonic() < deadline:
        c.pump(0.05)
    assert c.lent_to is None and notes[-1] == "returned"
    t, box = answer_in_background(c, link.T_PING)
    (_, fields), = board.requests(1)
    board.send(link.reply(fields[0], link.OK, ("pico-1", "0.1.0")))
    t.join(5)
    assert box["reply"].payload == ("pico-1", "0.1.0")
    c.close()


def test_a_lending_between_two_looks_is_still_told(served):
    # A quick mpremote can take the console and give it back while a client is not reading: the
    # client's lent_to never shows it, so the lending is kept until the client takes it.
    board, s = served
    quiet = client(board.port)
    watcher_notes = []
    watcher = client(board.port, on_notice=lambda e, t: watcher_notes.append(e))
    assert quiet.take_returns() == []
    fd = os.open(quiet.ser.info["raw"], os.O_RDWR | os.O_NOCTTY)
    try:
        deadline = time.monotonic() + 3
        while "lent" not in watcher_notes and time.monotonic() < deadline:
            watcher.pump(0.05)
        assert "lent" in watcher_notes
        lender = watcher.lent_to
    finally:
        os.close(fd)
    deadline = time.monotonic() + 3
    while "returned" not in watcher_notes and time.monotonic() < deadline:
        watcher.pump(0.05)
    assert watcher_notes[-1] == "returned"
    quiet.pump(0.2)                          # both notices arrive in one read
    assert quiet.lent_to is None
    # The monitor, looking now, tells both and will ask the board who it is again.
    notes = []
    mon = MonitorLoop(board.port, None, BoardStatus(board.port), out=lambda k, t: notes.append(t))
    mon.client = quiet
    mon._need_identify = False
    assert mon._console_lent() is False
    assert notes == ["the board's console is lent to %s: not asking anything until it is "
                     "returned" % lender, "the board's console is back from %s" % lender], notes
    assert mon._need_identify and mon._need_backfill and mon.status.lent_to is None
    assert quiet.take_returns() == []        # taken once
    watcher.close()
    quiet.close()


def test_the_socket_is_private(served):
    board, s = served
    sock_path, info_path, _ = s.hub.sock_path, s.hub.info_path, None
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(sock_path)).st_mode) == 0o700
    assert hub_client.find_hub(board.port)["pid"] == os.getpid()


def test_a_lost_board_disconnects_its_clients_with_the_reason(served):
    board, _ = served
    c = client(board.port)
    board.conn.close()
    with pytest.raises(Disconnected, match="went away"):
        for _ in range(100):
            c.pump(0.05)
    # While it is away, a new client is told there is no board.
    with pytest.raises(Exception, match="went away|no board"):
        client(board.port)


def test_a_lingering_hub_ends_after_its_last_client_and_frees_the_port(hub_rundir):
    board = HandBoard()
    t = threading.Thread(target=board.accept)
    t.start()
    s = Serving(board.port, linger=0.5)
    t.join(5)
    c = client(board.port)
    time.sleep(1.0)
    assert s.thread.is_alive()               # a client keeps it
    c.close()
    s.thread.join(5)
    assert not s.thread.is_alive()
    s.hub.close()
    assert hub_client.find_hub(board.port) is None
    assert board.conn.recv(10) == b""        # the hub let go of the port
    board.close()


def test_frame_ids_are_swapped_and_the_crc_follows():
    line = link.request(link.T_CONFIG_SET, 7, ("grasp_dwell_ms", 380))
    out = swap_first_field(line, 65000)
    assert link.decode(out) == (link.OK, link.T_CONFIG_SET, (65000, "grasp_dwell_ms", 380))
    assert swap_first_field(b"\x1eSP1p,7*00000000\n", 3) is None       # bad CRC: not a frame to touch
    act = link.encode(link.T_HIL_ACT, (12, 1, 2, 1500, 1500, 1500, 1500, 1500, 0, 0, 10, 2000))
    assert link.decode(swap_first_field(act, 4))[2][0] == 4


def test_board_lines_pass_text_at_once_and_frames_whole():
    bl = BoardLines()
    frame = link.reply(3, link.OK)
    out = bl.feed(b">>> pri" + frame[:10])
    assert out == [(False, b">>> pri")]                  # text at once, the frame held
    out = bl.feed(frame[10:] + b"nt\r\n")
    assert out == [(True, frame), (False, b"nt\r\n")]
    # Cut short by the next RS, or too long: passed on as they are, marked not whole.
    out = bl.feed(b"\x1eSP1E,1,2" + frame)
    assert out == [(False, b"\x1eSP1E,1,2"), (True, frame)]
    out = bl.feed(b"\x1e" + b"A" * 300 + b"\n")
    assert out[0][0] is False and len(out[0][1]) > link.MAX_FRAME_LEN
    p = FrameParser()
    assert p.feed(b"".join(x for _, x in out)) == [] and p.overlong == 1


def test_a_runtime_directory_too_deep_for_a_socket_is_named(monkeypatch, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    with pytest.raises(LinkError, match="too deep for a Unix socket.*XDG_RUNTIME_DIR"):
        Hub("socket://127.0.0.1:9")
