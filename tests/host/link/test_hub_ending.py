# A hub whose linger runs out as a client arrives (host/link/hub.py, hub_client.py): the hub
# stays for a client on its way in, and a client that still meets a hub hanging up before its
# welcome goes to the next hub or to the port itself instead of failing (a `doctor` run right
# after `job start --wait` once failed with "the link hub ... went away: Broken pipe").
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from surepick.host.link import hub_client, hubwire, rundir

from tests.support.hand_board import HandBoard
from tests.support.hub_serving import Serving


def _hello(sock, role="link"):
    sock.sendall(hubwire.pack(hubwire.HELLO, {"client": "test", "pid": os.getpid(), "role": role}))
    reader = hubwire.Reader()
    sock.settimeout(5.0)
    while True:
        data = sock.recv(65536)
        assert data, "the hub hung up before its welcome"
        for kind, payload in reader.feed(data):
            if kind == hubwire.WELCOME:
                return hubwire.load(payload)


def _board():
    board = HandBoard()
    t = threading.Thread(target=board.accept)
    t.start()
    return board, t


def test_a_client_slow_to_say_hello_keeps_a_lingering_hub(hub_rundir):
    board, t = _board()
    s = Serving(board.port, linger=0.3)
    t.join(5)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(rundir.hub_paths(board.port)[0]))
    time.sleep(1.0)                          # three lingers, well inside the hello's grace
    assert s.thread.is_alive()
    assert _hello(sock)["ok"]
    sock.close()
    s.thread.join(5)                         # and once it has gone, the linger ends the hub
    assert not s.thread.is_alive()
    s.hub.close()
    board.close()


def test_a_connection_waiting_on_a_paused_hub_is_served_when_its_linger_is_over(hub_rundir):
    # The hub process is stopped while the client connects: the connection waits in the
    # listener's queue while the hub's linger runs out. Resumed, the hub serves it.
    board, t = _board()
    hub_client.start_hub(board.port, linger=0.3)
    t.join(5)
    pid = int(hub_client.find_hub(board.port)["pid"])
    os.kill(pid, signal.SIGSTOP)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(rundir.hub_paths(board.port)[0]))
        time.sleep(1.0)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert _hello(sock)["ok"]
    sock.close()
    hub_client._wait_gone(pid)
    assert not rundir.pid_alive(pid) and hub_client.find_hub(board.port) is None
    board.close()


def _attach(port):
    return hub_client.attach(port, hub_client.USE)


def _raw_console(port):
    with hub_client.raw_console(port, mode=hub_client.USE) as dev:
        return dev


@pytest.mark.parametrize("connect", [_attach, _raw_console])
def test_a_hub_hanging_up_before_its_welcome_sends_the_client_to_the_port(hub_rundir, connect):
    # A stand-in for a hub at its last moment: its info names a live process, its socket takes
    # the connection and closes it unanswered. A link client (attach) or mpremote's console
    # (raw_console) waits for that process to end, then (no hub serving) is told to open the
    # port itself instead of failing.
    port = "socket://127.0.0.1:9"
    sock_path, info_path, _ = rundir.hub_paths(port)
    ending = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
    reaper = threading.Thread(target=ending.wait)     # reaped as it ends, as a hub's parent would
    reaper.start()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    listener.listen(4)
    info_path.write_text(json.dumps({"port": port, "pid": ending.pid, "socket": str(sock_path)}))

    def hang_up():
        conn, _ = listener.accept()
        conn.close()
        listener.close()
    t = threading.Thread(target=hang_up)
    t.start()
    try:
        assert connect(port) == (None if connect is _attach else port)   # the port itself
        assert ending.returncode is not None, "attach went on before the ending hub had let go"
    finally:
        t.join(5)
        reaper.join(5)
    assert hub_client.find_hub(port) is None
    assert not sock_path.exists() and not info_path.exists()     # its stale files are cleared
