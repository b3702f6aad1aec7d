# `surepick deploy` against the virtual board: the real unix micropython behind a loopback TCP
# port or a pty, driven through mpremote's transport. Checks what lands on the board's flash
# (a host directory) file by file, against the hashes of what we built.
import hashlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from surepick.host import deploy as dp
from surepick.host.deploy import install
from surepick.host.vboard import VirtualBoard

from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.cli import SUREPICK_BIN as SUREPICK

pytestmark = NEEDS_MICROPYTHON


@pytest.fixture
def board(flash):
    b = VirtualBoard(flash).start()
    try:
        b.wait_repl(20)
        yield b
    finally:
        b.close()


# The board's native-code architecture as the .mpy format numbers it (py/persistentcode.h
# MP_NATIVE_ARCH_*), and mpy-cross's -march name for it: deploy compiles the firmware's
# @micropython.native code for the board it deploys to, and the virtual board is the unix
# micropython of this machine, not an RP2040.
_MARCH_NAMES = {1: "x86", 2: "x64", 3: "armv6", 4: "armv6m", 5: "armv7m"}


def board_arch(board):
    r = subprocess.run([board.micropython, "-c", "import sys; print(sys.implementation._mpy >> 10)"],
                       capture_output=True, text=True, timeout=30)
    arch = int(r.stdout)
    assert arch in _MARCH_NAMES, "the virtual board's micropython has no native emitter (arch %d)" % arch
    return arch


def expected(board, src_root=None):
    # What deploy must install on this board: the manifest's files built for its architecture.
    return dp.build(src_root, False, dp.find_mpy_cross(), march=_MARCH_NAMES[board_arch(board)])


def on_flash(flash, board_path):
    return flash / board_path.lstrip("/")


def assert_installed(flash, arts, arch=None):
    # Every built file is on the flash with its exact content; no temp file is left; the
    # manifest lists exactly these files and hashes. arch: every .mpy holds native code for
    # that architecture or none (header byte 2, bits 2..7), and the firmware's app has some.
    for a in arts:
        p = on_flash(flash, a.board_path)
        assert p.exists(), a.board_path
        data = p.read_bytes()
        assert hashlib.sha256(data).hexdigest() == a.sha256, a.board_path
        if arch is not None and a.board_path.endswith(".mpy"):
            assert data[2] >> 2 in (0, arch), (a.board_path, data[2] >> 2, arch)
            if a.board_path == "/lib/surepick/firmware/app.mpy":
                assert data[2] >> 2 == arch, "app.mpy carries no native code for the board"
    temps = [str(p) for p in flash.rglob("*" + dp.TEMP_SUFFIX)]
    assert temps == []
    m = json.loads((flash / dp.MANIFEST.lstrip("/")).read_text())
    assert m["files"] == {a.board_path: a.sha256 for a in arts}
    assert m["micropython"].startswith("1.")


def test_deploy_from_scratch_then_nothing_changed(board, flash):
    res = dp.deploy(board.address, wait_hello=False)
    arts = expected(board)
    assert sorted(res.copied) == sorted(a.board_path for a in arts)
    assert res.unchanged == []
    assert_installed(flash, arts, board_arch(board))
    # the layout: one package in /lib/surepick, main.py in the root as source, nothing host-only
    assert (flash / "main.py").exists() and (flash / "lib/surepick/firmware/app.mpy").exists()
    assert (flash / "lib/surepick/shared_fsm/machine.mpy").exists()
    assert (flash / "lib/surepick/firmware/hal/rp2040.mpy").exists()
    for excluded in ("lib/surepick/shared_fsm/fake_hal.mpy", "lib/surepick/shared_fsm/fake_scenarios.mpy",
                     "lib/surepick/shared_fsm/trace_text.mpy", "lib/surepick/firmware/manifest.mpy",
                     "lib/surepick/firmware/main.mpy", "__init__.mpy", "__init__.py", "app.mpy"):
        assert not (flash / excluded).exists(), excluded
    notes = []
    res2 = dp.deploy(board.address, wait_hello=False, progress=notes.append)
    assert res2.copied == [] and len(res2.unchanged) == len(arts)
    assert any("nothing changed" in n for n in notes), notes
    assert_installed(flash, arts, board_arch(board))


def test_redeploy_one_file_changed_copies_exactly_one(board, flash, sources):
    dp.deploy(board.address, src_root=sources, wait_hello=False)
    target = sources / "shared_fsm" / "states.py"
    # (a comment would not do: it does not change the compiled .mpy, so nothing is copied)
    target.write_text(target.read_text() + "\n_CHANGED_BY_THE_TEST = 1\n")
    res = dp.deploy(board.address, src_root=sources, wait_hello=False)
    assert res.copied == ["/lib/surepick/shared_fsm/states.mpy"]
    assert_installed(flash, expected(board, sources), board_arch(board))


def test_source_deploy_replaces_mpy_twins(board, flash, sources):
    # .py is imported before .mpy: switching formats must not leave the other one behind.
    dp.deploy(board.address, src_root=sources, wait_hello=False)
    res = dp.deploy(board.address, src_root=sources, source=True, wait_hello=False)
    assert "/lib/surepick/firmware/app.mpy" in res.removed
    app = flash / "lib/surepick/firmware/app"
    assert not app.with_suffix(".mpy").exists() and app.with_suffix(".py").exists()
    assert_installed(flash, dp.build(sources, True))


def test_interrupted_deploy_then_rerun_is_consistent(board, flash):
    # Kill the deploying process while it is copying, check the board still holds only whole
    # files, then deploy again and check the result is exactly the built firmware.
    proc = subprocess.Popen([SUREPICK, "deploy", "--port", board.address, "--no-wait"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = False
    deadline = time.monotonic() + 40
    for line in proc.stdout:
        if line.startswith("[6/"):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        assert time.monotonic() < deadline
    proc.wait(10)
    assert killed, "the deploy finished before it could be interrupted"
    # midway: nothing installed yet (only temp files), no manifest
    assert not (flash / "lib/surepick/firmware/app.mpy").exists()
    assert not (flash / dp.MANIFEST.lstrip("/")).exists()
    board.wait_repl(10)
    res = dp.deploy(board.address, wait_hello=False)
    arts = expected(board)
    assert len(res.copied) == len(arts)   # temp files are never trusted as installed
    assert_installed(flash, arts, board_arch(board))
    assert dp.deploy(board.address, wait_hello=False).copied == []


def test_deploy_over_a_pty(flash):
    with VirtualBoard(flash, pty=True) as b:
        b.wait_repl(20)
        res = dp.deploy(b.address, wait_hello=False)
        assert res.copied and (flash / "lib/surepick/shared_fsm/link.mpy").exists()
        assert dp.deploy(b.address, wait_hello=False).copied == []


# ---- clear errors ----

def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_no_board_on_that_port():
    r = subprocess.run([SUREPICK, "deploy", "--port", "socket://127.0.0.1:%d" % _free_port()],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "no board on socket://127.0.0.1" in r.stderr
    r = subprocess.run([SUREPICK, "deploy", "--port", "/dev/ttyNOPE9"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and "does not exist" in r.stderr


def test_port_busy_names_the_other_client(board):
    other = socket.create_connection(board.address[len("socket://"):].split(":"))
    try:
        time.sleep(0.3)
        with pytest.raises(dp.DeployError, match="in use"):
            dp.deploy(board.address, wait_hello=False)
    finally:
        other.close()


def test_pty_busy_names_the_process(flash):
    with VirtualBoard(flash, pty=True) as b:
        b.wait_repl(20)
        holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'rb'); "
                                   "print('open', flush=True); time.sleep(30)", b.address],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline() == "open\n"      # it holds the port now
            with pytest.raises(dp.DeployError, match=r"in use by pid %d \(python" % holder.pid):
                dp.deploy(b.address, wait_hello=False)
        finally:
            holder.kill()
            holder.wait()


def test_device_without_micropython():
    # Something listens but never shows a raw REPL prompt (a board running other firmware).
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    stop = threading.Event()

    def serve():
        c, _ = srv.accept()
        while not stop.is_set():
            try:
                c.settimeout(0.1)
                if c.recv(100):
                    c.sendall(b"AT OK\r\n")
            except socket.timeout:
                continue
            except OSError:
                break
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with pytest.raises(dp.DeployError, match="did not answer as a MicroPython REPL"):
            dp.deploy("socket://127.0.0.1:%d" % srv.getsockname()[1], wait_hello=False,
                      connect_timeout=2)
    finally:
        stop.set()
        srv.close()


def test_a_board_that_keeps_sending_does_not_hold_a_deploy_for_ever():
    # A program that does not stop at Ctrl-C and streams without pause (mpremote's read_until
    # checks its overall timeout only between bytes, so this held a deploy for ever): the deploy
    # gives up at its connect timeout and says what it heard.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    stop = threading.Event()

    def stream(c):
        try:
            while not stop.is_set():
                c.sendall(b"frame frame frame\r\n" * 8)
                time.sleep(0.002)
        except OSError:
            pass
        c.close()

    def serve():
        while not stop.is_set():     # every connection: the deploy's checks open their own
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=stream, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    outcome = []

    def deploy():
        try:
            dp.deploy("socket://127.0.0.1:%d" % srv.getsockname()[1], wait_hello=False, connect_timeout=2)
            outcome.append(None)
        except dp.DeployError as e:
            outcome.append(e)
    d = threading.Thread(target=deploy, daemon=True)
    d.start()
    d.join(120)            # far past the 2 s timeout: a hang, not a slow machine
    stop.set()
    srv.close()
    assert outcome, "the deploy was still waiting for a raw REPL prompt after 120 s"
    assert isinstance(outcome[0], dp.DeployError), outcome
    assert "kept sending" in str(outcome[0]) and "did not stop at Ctrl-C" in str(outcome[0]), outcome
    assert "frame frame frame\\r\\n" in str(outcome[0]), outcome     # the last of what it sent


class _StubRawReplBoard:
    # Stands in for RawReplBoard (mpremote's transport) to test the checks made before anything is copied.
    info_tuple = None
    hashes_result = ({}, {"/": [], "/lib/surepick": None})
    writes = []

    def __init__(self, port):
        pass

    def connect(self, timeout):
        pass

    def close(self):
        pass

    def info(self):
        return dp.MicropythonInfo(self.info_tuple)

    def hashes(self, paths, dirs):
        return self.hashes_result

    def write(self, path, data, on_chunk=None):
        _StubRawReplBoard.writes.append(path)


def test_too_old_micropython_is_refused(monkeypatch):
    _StubRawReplBoard.info_tuple = ("micropython", (1, 20, 0), 6, 4096, 300, "rp2", 1)
    monkeypatch.setattr(install, "RawReplBoard", _StubRawReplBoard)
    with pytest.raises(dp.DeployError, match=r"MicroPython 1\.20\.0; surepick needs 1\.22"):
        dp.deploy("stub", wait_hello=False)


def test_not_micropython_is_refused(monkeypatch):
    _StubRawReplBoard.info_tuple = ("circuitpython", (9, 0, 0), 6, 4096, 300, "rp2", 1)
    monkeypatch.setattr(install, "RawReplBoard", _StubRawReplBoard)
    with pytest.raises(dp.DeployError, match="runs circuitpython, not MicroPython"):
        dp.deploy("stub", wait_hello=False)


def test_mpy_version_mismatch_suggests_source(monkeypatch):
    _StubRawReplBoard.info_tuple = ("micropython", (1, 22, 0), 5, 4096, 300, "rp2", 1)
    monkeypatch.setattr(install, "RawReplBoard", _StubRawReplBoard)
    with pytest.raises(dp.DeployError, match="loads .mpy v5 but mpy-cross emits v6.*--source"):
        dp.deploy("stub", wait_hello=False)


def test_not_enough_flash_is_checked_before_copying(monkeypatch):
    # 6 free blocks of 4 KB: far less than 26 files need. Nothing may be written.
    _StubRawReplBoard.info_tuple = ("micropython", (1, 24, 1), 6 | (3 << 8) | (4 << 10), 4096, 6, "rp2", 1)
    _StubRawReplBoard.writes = []
    monkeypatch.setattr(install, "RawReplBoard", _StubRawReplBoard)
    with pytest.raises(dp.DeployError, match="not enough flash on the board"):
        dp.deploy("stub", wait_hello=False)
    assert _StubRawReplBoard.writes == []


def test_deploy_waits_for_the_firmware_hello(flash):
    with VirtualBoard(flash) as b:
        b.wait_booted(20)
        res = dp.deploy(b.address, wait_hello=True, hello_timeout=30)
        assert res.hello is not None and res.hello[2] == 1


def test_deploy_ships_the_arm_description_and_keeps_it(board, flash):
    # --arm ships the checked description as compact JSON; a later deploy without it leaves the
    # board's /arm.json alone; the firmware validates it (the shared validator, under micropython).
    from surepick.host.arms import files
    from surepick.shared_fsm import arm as arm_mod
    arm, _ = files.load("al5d_mg996r")
    res = dp.deploy(board.address, wait_hello=False, arm_json=files.compact_json(arm))
    assert "/arm.json" in res.copied
    on_board = json.loads((flash / "arm.json").read_text())
    assert arm_mod.validate(on_board).to_dict() == arm.to_dict()
    res2 = dp.deploy(board.address, wait_hello=False)
    assert "/arm.json" not in res2.copied and (flash / "arm.json").exists()
    assert json.loads((flash / "arm.json").read_text()) == on_board


def test_deploy_refuses_a_bad_description_before_touching_the_board(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("format = 1\nname = \"x\"\nkind = \"delta\"\n")
    proc = subprocess.run([SUREPICK, "deploy", "--port", "socket://127.0.0.1:9", "--arm", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "'kind'" in proc.stderr


def test_deploy_settles_an_old_boards_servo_settings(board, flash):
    # A board from before arm descriptions: its servo pins and trims in /config.json. A deploy
    # of a description that contradicts them is refused before anything is written, naming the
    # key; one that agrees takes them out of /config.json (its other settings kept);
    # --replace-servo-settings takes out contradicting ones too, and says which.
    from surepick.host.arms import files
    arm, _ = files.load("reference")
    old = {"version": 1, "board": {"pin_servo0": 7, "servo1_trim_us": 0, "telemetry_hz": 5},
           "machine": {"grasp_dwell_ms": 400}}
    (flash / "config.json").write_text(json.dumps(old))
    before = {p.name: p.read_bytes() for p in flash.iterdir() if p.is_file()}
    with pytest.raises(dp.DeployError, match=r"pin_servo0 = 7, this description's servos.base.gpio says 2"):
        dp.deploy(board.address, wait_hello=False, arm_json=files.compact_json(arm))
    assert {p.name: p.read_bytes() for p in flash.iterdir() if p.is_file()} == before    # nothing written
    said = []
    dp.deploy(board.address, wait_hello=False, arm_json=files.compact_json(arm), progress=said.append,
              replace_servo_settings=True)
    assert json.loads((flash / "config.json").read_text()) == {
        "version": 1, "board": {"telemetry_hz": 5}, "machine": {"grasp_dwell_ms": 400}}
    line = [s for s in said if s.startswith("config:")]
    assert line and "pin_servo0 = 7 (servos.base.gpio = 2)" in line[0] and "servo1_trim_us = 0" in line[0]
    # an agreeing key goes without the flag; a later deploy without it keeps /config.json
    (flash / "config.json").write_text(json.dumps({"version": 1, "board": {"servo4_max_us": 2500}}))
    dp.deploy(board.address, wait_hello=False, arm_json=files.compact_json(arm))
    assert json.loads((flash / "config.json").read_text()) == {"version": 1, "board": {}}
    dp.deploy(board.address, wait_hello=False)
    assert (flash / "config.json").exists()
