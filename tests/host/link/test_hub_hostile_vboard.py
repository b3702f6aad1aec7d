# The link hub as a guard (host/link/hub.py), through a real hub to the virtual board running the
# firmware: raw hostile bytes from a client must never reach the board's REPL, one client's flood
# must not starve another, and running out of file descriptors must not end the hub.
import binascii
import os
import socket
import subprocess
import sys
import time

import pytest

from surepick.host.engines.vboard_world import board_in_world
from surepick.host.link import hub_client, hubwire, rundir
from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link

from tests.support.hub_serving import Serving
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import deploy_firmware

pytestmark = NEEDS_MICROPYTHON


@pytest.fixture
def board(tmp_path, hub_rundir):
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    b = board_in_world(flash, "nominal", 1, realtime=True)
    with b:
        yield b, flash


def _ping(port, timeout):
    with LinkClient(port, name="probe").open() as c:
        return c.request(link.T_PING, (), timeout)


def _wait_firmware(port, deadline_s=60):
    # the firmware answers once it booted (its HELLO may have gone before the hub connected)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if _ping(port, 2.0).ok:
                return
        except Exception:  # not up yet
            time.sleep(0.2)
    raise AssertionError("the firmware never answered a PING through the hub")


def _framed(body):
    # a frame line with a good CRC over whatever body it carries
    return b"\x1e" + body + b"*%08X\n" % (binascii.crc32(body) & 0xFFFFFFFF)


def test_repl_text_inside_a_crc_valid_frame_never_reaches_the_board(board):
    b, flash = board
    s = Serving(b.address)
    try:
        _wait_firmware(b.address)
        code = b"open('/pwned.txt','w').write('x')"
        hostile = [
            _framed(b"SP1p,1,\x03\r" + code + b"\r"),           # Ctrl-C, then code at the REPL
            _framed(b"SP1p,2,\x03\x03\x04"),                    # Ctrl-C Ctrl-C Ctrl-D (soft reboot)
            _framed(b"SP1j,3,1,2,3,4,5,6,7,8,9,10,\x05" + code),  # paste mode
            _framed(b"SP1p,4,import os"),                        # a PING with a field too many
            b"\x03\x03\r\n" + code + b"\r\n",
        ]
        stream = hub_client.HubStream(b.address, "hostile test")
        for h in hostile:
            stream.write(h)
        # every hostile line is refused by name (the plain REPL text is not a frame: dropped)
        end = time.monotonic() + 10
        while len([n for n in stream.notices if n[0] == "refused"]) < 4 and time.monotonic() < end:
            stream._pump(0.1)
        refused = [n for n in stream.notices if n[0] == "refused"]
        assert len(refused) == 4, stream.notices
        stream.close()
        time.sleep(1.0)
        # the firmware still runs (it answers), and nothing ran at its REPL
        r = _ping(b.address, 5.0)
        assert r.ok
        assert not (flash / "pwned.txt").exists()
        assert s.hub.stats["refused"] >= 4
    finally:
        s.close()


def test_ten_thousand_pings_in_one_message_do_not_starve_another_client(board):
    b, _ = board
    s = Serving(b.address)
    try:
        _wait_firmware(b.address)
        flood = hub_client.HubStream(b.address, "flood")
        flood.write(b"".join(link.request(link.T_PING, 1 + i % 65535) for i in range(10000)))
        # the other tool is answered while the flood is still being served
        t0 = time.monotonic()
        r = _ping(b.address, 10.0)
        waited = time.monotonic() - t0
        assert r.ok, r
        # (the flood is served at the board's pace: one a tick; it is far from done)
        assert s.hub.stats["requests"] < 10000
        # past its fair share the flood is refused, not queued without bound
        end = time.monotonic() + 5
        while not flood.refused and time.monotonic() < end:
            flood._pump(0.1)
        assert flood.refused, "a client past its queue is refused"
        print("another client answered after %.2f s of a 10,000 PING flood" % waited)
        flood.close()
    finally:
        s.close()


def test_out_of_file_descriptors_the_hub_refuses_newcomers_and_keeps_serving(board, hub_rundir):
    b, _ = board
    env = dict(os.environ, XDG_RUNTIME_DIR=hub_rundir)
    r_fd, w_fd = os.pipe()
    # the hub in its own process with a small descriptor limit (prlimit's RLIMIT_NOFILE)
    hub = subprocess.Popen(["prlimit", "--nofile=48", sys.executable, "-m", "surepick.host.link.hub",
                            "--port", b.address, "--ready-fd", str(w_fd)], env=env, pass_fds=(w_fd,),
                           stderr=subprocess.PIPE)
    os.close(w_fd)
    idle = []
    try:
        with os.fdopen(r_fd) as ready:
            assert ready.readline().strip() == "ready"
        _wait_firmware(b.address)
        with LinkClient(b.address, name="kept").open() as kept:
            sock_path = str(rundir.hub_paths(b.address)[0])
            for _ in range(80):                          # far past what 48 descriptors allow
                sk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sk.connect(sock_path)
                idle.append(sk)
            # a newcomer now is told why it is turned away (once the hub has worked through
            # the connections queued before it)
            end = time.monotonic() + 20
            why = ""
            while time.monotonic() < end:
                try:
                    hub_client.HubStream(b.address, "newcomer", connect_timeout=5.0).close()
                    why = "served"
                except Exception as e:  # the refusal, or a backlog still full
                    why = str(e)
                if "file descriptors" in why or "clients already" in why:
                    break
                time.sleep(0.1)
            assert "file descriptors" in why or "clients already" in why, why
            # ... and the client it had keeps being served
            assert kept.request(link.T_PING, (), 5.0).ok
            assert hub.poll() is None, hub.stderr.read().decode()
        for sk in idle:
            sk.close()
        idle = []
        # with descriptors free again, new clients are served
        end = time.monotonic() + 10
        while True:
            try:
                assert _ping(b.address, 5.0).ok
                break
            except AssertionError:
                raise
            except Exception:
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
        assert hub.poll() is None
    finally:
        for sk in idle:
            sk.close()
        hub.terminate()
        hub.wait(10)
