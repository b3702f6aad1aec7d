# What a board has already sent is taken in one read, however the port says how much waits:
# pyserial's socket:// port (a virtual board) says only "some" (in_waiting 1), a pty or a real
# serial device the exact count. A read that took a byte or two a call left a client spinning
# through a virtual board's telemetry a couple of bytes at a time. The board is played by hand:
# frames sent in one write are all there before the client reads (loopback and a pty hand them
# over within the write), so one read_frames must decode every one of them.
import os
import pty
import tty

from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link

from tests.support.hand_board import HandBoard

N = 40          # 40 frames of ~20 bytes: hundreds of bytes, far more than one or two a read


def _burst():
    return b"".join(link.reply(rid, link.OK, (rid * 7,)) for rid in range(1, N + 1))


def _check(frames):
    assert [(f.ftype, f.fields[0], f.fields[2]) for f in frames] == \
        [(link.T_REPLY, rid, rid * 7) for rid in range(1, N + 1)], frames


def test_a_socket_port_gives_a_whole_burst_in_one_read():
    board = HandBoard()
    client = LinkClient(board.port, hub=hub_client.DIRECT).open()
    try:
        board.accept()
        board.send(_burst())
        _check(client.read_frames(2.0))
        assert client.read_frames(0.05) == []     # nothing left behind, nothing made up
    finally:
        client.close()
        board.close()


def test_a_pty_gives_a_whole_burst_in_one_read():
    master, slave = pty.openpty()
    tty.setraw(slave)
    client = LinkClient(os.ttyname(slave), hub=hub_client.DIRECT).open()
    try:
        os.write(master, _burst())
        _check(client.read_frames(2.0))
        assert client.read_frames(0.05) == []
    finally:
        client.close()
        os.close(master)
        os.close(slave)
