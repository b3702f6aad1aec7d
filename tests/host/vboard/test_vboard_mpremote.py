# The virtual board seen from the outside: real `mpremote` processes (and a raw serial
# client for what mpremote never does) against the unix `micropython` binary, over a pty and
# over socket://. Each test is bounded by subprocess timeouts and well under a minute.
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial

from surepick.host.vboard import CRASH, HARD, POWER_ON, SOFT, VirtualBoard

from tests.support.monitor import wait_until
from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON

# says "looping" once it is in its loop, so a test waits for that, not for a nap
LOOP_FOREVER = ("import time\nn = 0\nwhile True:\n    n += 1\n    if n == 1:\n        print('looping')\n"
                "    time.sleep_ms(5)\n")


def mpremote(board, *args, timeout=30):
    proc = subprocess.run([MPREMOTE, "connect", board.address, *args], capture_output=True,
                          timeout=timeout)
    assert proc.returncode == 0, "mpremote %s failed:\n%s\n%s\ntranscript tail: %r" % (
        " ".join(args), proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
        board.transcript()[-400:])
    return proc.stdout.decode()


def exec_out(board, code, *pre):
    return mpremote(board, *pre, "exec", code).strip()


@pytest.fixture
def empty_hal(tmp_path):
    d = tmp_path / "hal"
    d.mkdir()
    return d


def make_board(flash, kind="tcp", **kw):
    return VirtualBoard(flash, pty=(kind == "pty"), **kw).start()


@pytest.fixture(params=["pty", "tcp"])
def board(request, flash):
    b = make_board(flash, request.param)
    b.wait_repl()
    yield b
    b.close()


@pytest.fixture
def tcp_board(flash):
    b = make_board(flash)
    b.wait_repl()
    yield b
    b.close()


class Line:
    # A bare serial client (pyserial, like mpremote) for bytes mpremote never sends.
    def __init__(self, board):
        self.ser = serial.serial_for_url(board.address, timeout=0.05)
        self.seen = b""

    def send(self, data):
        self.ser.write(data)

    def drain(self, quiet=0.3):
        # Read until the board has been silent for `quiet` seconds; forget what came.
        while self.ser.read(4096) or self.ser.read(4096):
            pass
        time.sleep(quiet)
        self.ser.read(65536)
        self.seen = b""

    def expect(self, token, timeout=10):
        end = time.monotonic() + timeout
        while token not in self.seen:
            assert time.monotonic() < end, "no %r in %r" % (token, self.seen[-300:])
            self.seen += self.ser.read(4096)
        head, _, self.seen = self.seen.partition(token)
        return head

    def close(self):
        self.ser.close()


# -- mpremote basics, over both transports -----------------------------------------------------

def test_exec_soft_resets_first_like_a_pico(board):
    before = board.boot_count
    assert exec_out(board, "print(1+1)") == "2"
    # Without `resume` mpremote soft-resets in the raw REPL: OK, soft reboot, raw REPL again.
    assert board.boot_count == before + 1 and board.boot_kind == SOFT
    assert b">OK\r\nMPY: soft reboot\r\nraw REPL; CTRL-B to exit\r\n>" in board.transcript()


def test_resume_exec_does_not_reset(board):
    assert exec_out(board, "x = 7", "resume") == ""
    before = board.boot_count
    assert exec_out(board, "print(x * 6)", "resume") == "42"
    assert board.boot_count == before


def test_fs_cp_ls_cat_and_run(board, flash, tmp_path):
    local = tmp_path / "local.py"
    local.write_text("def twice(v):\n    return 2 * v\nprint('loaded')\n")
    mpremote(board, "fs", "cp", str(local), ":x.py")
    assert (flash / "x.py").read_text() == local.read_text()
    assert "x.py" in mpremote(board, "fs", "ls")
    assert "return 2 * v" in mpremote(board, "fs", "cat", "x.py")
    assert exec_out(board, "import x; print(x.twice(21))") == "loaded\r\n42"  # CRLF, as a Pico prints
    script = tmp_path / "script.py"
    script.write_text("import sys\nprint('ran on', sys.platform, sum(range(10)))\n")
    assert mpremote(board, "run", str(script)).strip() == "ran on linux 45"


def test_soft_reset_keeps_flash_and_clears_ram(board, flash):
    mpremote(board, "exec", "open('kept.txt', 'w').write('survives')\nvolatile = 1")
    before = board.boot_count
    mpremote(board, "soft-reset")
    assert board.boot_count == before + 1
    assert (flash / "kept.txt").read_text() == "survives"
    out = exec_out(board, "print(open('kept.txt').read(), 'volatile' in globals())", "resume")
    assert out == "survives False"


def test_ctrl_c_takes_over_a_running_main_py(board_kind, flash):
    (flash / "main.py").write_text(LOOP_FOREVER)
    (flash / "data.bin").write_bytes(bytes(range(256)))
    b = make_board(flash, board_kind)
    try:
        b.wait_booted()
        wait_until(lambda: b"looping" in b.transcript(), 60, "main.py to be in its loop")
        assert exec_out(b, "print(n > 0, 6 * 7)", "resume") == "True 42"
        assert b"KeyboardInterrupt" in b.transcript()
        assert exec_out(b, "import os; print(sorted(os.listdir()))") == \
            "['data.bin', 'main.py']"
        assert (flash / "main.py").read_text() == LOOP_FOREVER
        assert (flash / "data.bin").read_bytes() == bytes(range(256))
    finally:
        b.close()


@pytest.fixture(params=["pty", "tcp"])
def board_kind(request):
    return request.param


def test_ctrl_c_takes_over_an_mpremote_run_left_running(board, tmp_path):
    # `run --no-follow` leaves code running from a raw-paste exec; the next mpremote must
    # interrupt it (SIGINT while it runs, not a byte in its stdin) and soft-reset as usual.
    loop = tmp_path / "loop.py"
    loop.write_text("import time\nwhile True:\n    time.sleep_ms(1)\n")
    mpremote(board, "run", "--no-follow", str(loop))
    time.sleep(0.2)
    before = board.boot_count
    assert exec_out(board, "print('taken over')") == "taken over"
    assert board.boot_count == before + 1  # the ordinary soft reset, not a crash restart
    assert board.boot_kind == SOFT


def test_big_binary_file_round_trip(tcp_board, tmp_path):
    data = os.urandom(24 * 1024) + bytes(range(256)) * 8
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    back = tmp_path / "back.bin"
    mpremote(tcp_board, "fs", "cp", str(src), ":big.bin", "+", "fs", "cp", ":big.bin", str(back),
             timeout=60)
    assert back.read_bytes() == data


# -- boot, resets and the REPL modes ---------------------------------------------------------

def test_boot_runs_boot_py_then_main_py(flash):
    (flash / "boot.py").write_text("print('boot.py here')\n")
    (flash / "main.py").write_text(
        "f = open('count.txt', 'a'); f.write('x'); f.close()\nprint('main.py here')\n")
    b = make_board(flash)
    try:
        b.wait_repl()
        t = b.transcript()
        assert t.index(b"boot.py here") < t.index(b"main.py here") < t.index(b">>> ")
        assert b"\x1b_vboard" not in t  # markers never reach the client
        # Soft reset from the raw REPL (mpremote's): boot.py again, but not main.py.
        mpremote(b, "soft-reset")
        assert (flash / "count.txt").read_text() == "x"
        # Ctrl-D at the friendly prompt: soft reboot that runs main.py, back to ">>> ".
        line = Line(b)
        line.send(b"\r\x02")
        line.drain()
        line.send(b"\x04")
        after = line.expect(b"main.py here")
        line.expect(b">>> ")
        line.close()
        assert after.startswith(b"\r\nMPY: soft reboot\r\nboot.py here")
        assert (flash / "count.txt").read_text() == "xx"
    finally:
        b.close()


def test_sys_exit_in_main_py_soft_reboots(flash):
    (flash / "main.py").write_text(
        "import sys\nf = open('n.txt', 'a'); f.write('x'); f.close()\n"
        "if len(open('n.txt').read()) < 3:\n    sys.exit()\n")
    b = make_board(flash)
    try:
        b.wait_repl()
        assert (flash / "n.txt").read_text() == "xxx"
        assert b.transcript().count(b"MPY: soft reboot\r\n") == 2
    finally:
        b.close()


def test_power_cut_then_reconnect(flash):
    (flash / "main.py").write_text(
        "import time\nwhile True:\n    f = open('log.txt', 'a'); f.write('entry\\n'); f.close()\n"
        "    time.sleep_ms(2)\n")
    b = make_board(flash)
    try:
        b.wait_booted()
        log_txt = flash / "log.txt"
        wait_until(lambda: log_txt.exists() and log_txt.read_text().count("entry") >= 2, 60,
                   "main.py to log twice before the cut")
        first = b.pid
        b.power_cut()
        assert b.pid != first and b.boot_kind == POWER_ON
        b.wait_booted()
        out = exec_out(b, "import vboard_settings as s\nprint(s.RESET_CAUSE, s.BOOT_KIND)", "resume")
        assert out == "1 power_on"
        log = (flash / "log.txt").read_text()
        assert log.count("entry") >= 2 and set(log.replace("entry\n", "")) <= set("entry")
    finally:
        b.close()


def test_reset_causes_reach_the_board(flash):
    b = make_board(flash)
    code = "import vboard_settings as s\nprint(s.RESET_CAUSE, s.BOOT_KIND, s.BOOT_COUNT)"
    try:
        b.wait_repl()
        b.watchdog_reset()
        assert exec_out(b, code, "resume") == "3 watchdog 2"
        b.soft_reset()  # a soft reset keeps the hardware cause
        assert exec_out(b, code, "resume") == "3 soft 3"
        b.hard_reset()
        assert exec_out(b, code, "resume") == "1 hard 4"
        os.kill(b.pid, signal.SIGSEGV)  # an interpreter crash is a reset too
        b.wait_booted(boot=5)
        assert b.boot_kind == CRASH
        assert exec_out(b, code, "resume") == "1 crash 5"
        # And the board can ask for one itself (the future HAL's machine.reset()).
        mpremote(b, "resume", "exec", "--no-follow", "import vboard_ctl; vboard_ctl.reset('hard')")
        b.wait_booted(boot=6)
        assert b.boot_kind == HARD
    finally:
        b.close()


def test_plant_settings_reach_the_board_outside_its_filesystem(flash):
    class Plant:
        def start(self):
            return ("127.0.0.1", 40999)

        def stop(self):
            self.stopped = True

    plant = Plant()
    b = make_board(flash, world_service=plant, scenario="pick-one", seed=7)
    try:
        b.wait_repl()
        out = exec_out(b, "import vboard_settings as s\n"
                          "print(s.PLANT, s.SCENARIO, s.SEED)")
        assert out == "('127.0.0.1', 40999) pick-one 7"
        # The board's own modules are preloaded, like a Pico's frozen ones: none of it is in
        # the board's filesystem or on its path.
        out = exec_out(b, "import os, sys\nprint(os.listdir('/'), sys.path)")
        assert out == "[] ['', '.frozen', '/lib']"
        out = exec_out(b, "try:\n open('/.vboard/x.py', 'w')\nexcept OSError as e:\n print(e)")
        assert "ENOENT" in out
    finally:
        b.close()
    assert plant.stopped


def test_client_disconnect_does_not_reset(tcp_board):
    mpremote(tcp_board, "resume", "exec", "kept = 'still here'")
    boots = tcp_board.boot_count
    line = Line(tcp_board)
    line.send(b"\r\x02")
    line.expect(b">>> ")
    line.close()  # unplug mid-session
    assert exec_out(tcp_board, "print(kept)", "resume") == "still here"
    assert tcp_board.boot_count == boots


def test_ctrl_c_at_the_prompt_is_just_a_byte(tcp_board):
    line = Line(tcp_board)
    line.send(b"\r\x02")
    line.drain()
    line.send(b"abc\x03")  # cancels the line, as on a Pico; must not kill the interpreter
    line.expect(b">>> ")
    line.send(b"print([i * 11 for i in range(3)])\r")
    assert b"[0, 11, 22]" in line.expect(b">>> ")
    line.send(b"while True: pass\r\r")
    time.sleep(0.2)
    line.send(b"\x03\x03\x03")  # interrupts running code, once (a 2nd SIGINT would kill it)
    assert b"KeyboardInterrupt" in line.expect(b">>> ")
    line.drain()  # Ctrl-Cs that land after the interrupt are the prompt's, as on a Pico
    line.send(b"print('alive')\r")
    assert b"alive" in line.expect(b">>> ")
    line.close()
    assert tcp_board.boot_count == 1


def test_second_tcp_client_is_turned_away(tcp_board):
    first = Line(tcp_board)
    try:
        host, port = tcp_board.address[len("socket://"):].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as second:
            said = b""
            while True:
                chunk = second.recv(200)
                if not chunk:
                    break
                said += chunk
        assert b"busy" in said
        first.send(b"\r\x02")
        first.expect(b">>> ")
    finally:
        first.close()


def test_a_client_that_just_hung_up_does_not_turn_the_next_away(tcp_board):
    # A tool that closes the port and another that opens it at once (a bench's console, then its
    # link client): the board sees the hang-up and the new connection in the same poll, and must
    # not take the first for a client still there.
    host, port = tcp_board.address[len("socket://"):].rsplit(":", 1)
    for i in range(50):
        first = socket.create_connection((host, int(port)), timeout=5)
        time.sleep(0.02)                  # accepted
        first.close()
        with socket.create_connection((host, int(port)), timeout=5) as second:
            second.settimeout(0.05)
            try:
                said = second.recv(200)
            except socket.timeout:
                said = b"(nothing)"
            assert b"busy" not in said, "connection %d was turned away: %r" % (i, said)


# -- the `surepick board` verb -----------------------------------------------------------------

def test_cli_serves_and_stops_on_sigterm(flash):
    proc = subprocess.Popen([sys.executable, "-m", "surepick.host.cli.main", "board", "--listen",
                             "127.0.0.1:0", "--flash", str(flash), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "no address line from surepick board"
        line = proc.stdout.readline().decode()
        assert line.startswith("surepick-board: serving on socket://127.0.0.1:")
        address = line.split()[-1]

        class Addr:
            pass
        target = Addr()
        target.address = address
        target.transcript = lambda: b""
        assert exec_out(target, "print('via cli')") == "via cli"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_serves_a_pty_and_stops_on_sigint(flash):
    proc = subprocess.Popen([sys.executable, "-m", "surepick.host.cli.main", "board", "--pty",
                             "--flash", str(flash), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "no address line from surepick board"
        line = proc.stdout.readline().decode()
        assert line.startswith("surepick-board: serving on /dev/pts/")
        out = subprocess.run([MPREMOTE, "connect", line.split()[-1], "exec", "print(40 + 2)"],
                             capture_output=True, timeout=30)
        assert out.stdout.strip() == b"42", out
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_refuses_non_loopback(flash):
    proc = subprocess.run([sys.executable, "-m", "surepick.host.cli.main", "board", "--listen",
                           "0.0.0.0:0", "--flash", str(flash)], capture_output=True, timeout=30)
    assert proc.returncode == 2 and b"--allow-remote" in proc.stderr


def test_cli_names_a_port_in_use_and_the_way_out(flash):
    # Another program holds the port: the board says so and how to get a free one (exit 2, the
    # person's choice of port), not a bare "[Errno 98]".
    import socket
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "surepick.host.cli.main", "board", "--listen",
                               "127.0.0.1:%d" % port, "--flash", str(flash)], capture_output=True, text=True,
                              timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "cannot listen on 127.0.0.1:%d: the port is in use" % port in proc.stderr, proc.stderr
    assert "--listen without one for a free port" in proc.stderr, proc.stderr
