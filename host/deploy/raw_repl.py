# The board end of a deploy: mpremote's SerialTransport held in the raw REPL, and the few
# operations a deploy needs there (what MicroPython runs, hash files, write, rename, reset).
# Each operation is one small snippet exec'd on the board.
import os
import time

from surepick.host.deploy.errors import DeployError

WRITE_CHUNK = 1024                     # bytes per raw-REPL write: small enough for a Pico heap


_INFO = """
import sys, os
try:
    import hashlib
    hashlib.sha256
    _h = 1
except Exception:
    _h = 0
_s = os.statvfs('/')
print(repr((sys.implementation.name, tuple(sys.implementation.version), getattr(sys.implementation, '_mpy', 0), _s[0], _s[3], sys.platform, _h, getattr(sys.implementation, '_machine', ''))))
"""

# Stop the chip's watchdog first thing at the raw REPL: a firmware stopped by Ctrl-C stops it
# itself, but one that crashed, or an older firmware that wrote another chip's address (an RP2040
# address lands in the RP2350's USB PLL), leaves it running, and it would reset the board within
# its timeout, in the middle of the deploy. The chip comes from the machine string; a board this
# table does not know gets no write at all. -> (machine string, address written or 0)
_STOP_WATCHDOG = """
import sys
_sp_m = getattr(sys.implementation, '_machine', '')
_sp_a = %r.get(_sp_m.rpartition(' with ')[2], 0)
if _sp_a:
    import machine
    machine.mem32[_sp_a] = %d
print(repr((_sp_m, _sp_a)))
"""

# -> {path: sha256 hex or None} for PATHS, and the names in each of DIRS.
_HASHES = """
import os, hashlib, binascii
def _sp_hash(p):
    try:
        f = open(p, 'rb')
    except OSError:
        return None
    h = hashlib.sha256()
    b = bytearray(512)
    m = memoryview(b)
    while True:
        n = f.readinto(b)
        if not n:
            break
        h.update(m[:n])
    f.close()
    return binascii.hexlify(h.digest()).decode()
def _sp_ls(d):
    try:
        return [e[0] for e in os.ilistdir(d) if e[1] == 0x8000]
    except OSError:
        return None
print(repr(({p: _sp_hash(p) for p in %r}, {d: _sp_ls(d) for d in %r})))
"""

_MKDIRS = """
import os
for d in %r:
    try:
        os.mkdir(d)
    except OSError:
        pass
"""

# Rename each temp file over its target. Paths are made relative to "/" (we chdir there): a
# bare unix-port VfsPosix with a root mishandles absolute renames (the virtual board's
# boot_shim now wraps it, but an older virtual board or a plain unix micropython may not);
# littlefs on a Pico does not care. FAT cannot rename over a file: remove it first there.
_INSTALL = """
import os
os.chdir('/')
def _sp_mv(t, p):
    try:
        os.rename(t.lstrip('/'), p.lstrip('/'))
    except OSError:
        os.remove(p)
        os.rename(t.lstrip('/'), p.lstrip('/'))
for _p in %r:
    try:
        os.remove(_p)
    except OSError:
        pass
for _t, _p in %r:
    _sp_mv(_t, _p)
for _p in %r:
    try:
        os.remove(_p)
    except OSError:
        pass
"""


def stop_watchdog_code():
    # The snippet, its table built from the chips' own (firmware/hal/rp2_chips.py).
    from surepick.firmware.hal import rp2_chips
    where = {chip: base + rp2_chips.ALIAS_CLR for chip, (base, _, _) in rp2_chips.CHIPS.items()}
    return _STOP_WATCHDOG % (where, rp2_chips.WATCHDOG_CTRL_ENABLE)


class MicropythonInfo:
    # What the board's MicroPython reports about itself and its filesystem.
    def __init__(self, t):
        from surepick.firmware.hal import rp2_chips
        self.impl, self.version, self.mpy, self.block_size, self.free_blocks, self.platform, \
            self.has_sha256, self.machine = tuple(t) + ("",) * (8 - len(t))   # older snippets: no machine
        self.version = tuple(self.version)
        self.board = rp2_chips.identify(self.machine)

    @property
    def march(self):
        # The native code to compile for: what the interpreter says it loads, else its chip's.
        from surepick.host.deploy.artifacts import march_of
        return march_of(self.mpy) or self.board.march

    @property
    def board_text(self):
        # "Raspberry Pi Pico2 (RP2350)", or the port's platform when it is no Pico
        b = self.board
        return "%s (%s)" % (b.name, b.chip) if b.chip else self.platform

    @property
    def version_text(self):
        v = ".".join(str(x) for x in self.version[:3])
        return v + ("-" + str(self.version[3]) if len(self.version) > 3 and self.version[3] else "")

    @property
    def mpy_major(self):
        return self.mpy & 0xFF

    @property
    def mpy_minor(self):
        return (self.mpy >> 8) & 3

    @property
    def free_bytes(self):
        return self.block_size * self.free_blocks


def _why_not_open(port, transport_error):
    # mpremote says only "failed to access PORT"; opening it the way the link does names the
    # cause (connection refused, no such device) in the words every other verb uses.
    from surepick.host.link import ports
    from surepick.host.link.errors import LinkError
    try:
        ports.open_serial(port).close()
    except LinkError as e:
        return str(e)
    return "no board on %s: %s" % (port, transport_error)


def _pyrepr_eval(raw):
    import ast
    return ast.literal_eval(raw.decode().strip())


_RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n"
_SOFT_REBOOT = b"soft reboot\r\n"


class _Heard:
    # What the board sent while a handshake waited for its prompt: how much, and the last of it
    # (for the error, which quotes it: a traceback or the firmware's frames tell what still runs).
    TAIL = 120

    def __init__(self):
        self.count = 0
        self.tail = b""

    def add(self, b):
        self.count += len(b)
        self.tail = (self.tail + b)[-self.TAIL:]


def _read_to(serial, endings, deadline, heard):
    # -> True once each of `endings` arrived, in order, False at the deadline. mpremote's
    # read_until checks its overall timeout only while no byte arrives, so a board that kept
    # sending (a firmware still streaming its frames) held a deploy there for ever.
    # Read a byte at a time: what follows the last ending (the raw prompt) is mpremote's to read.
    # heard: a _Heard, given every byte read.
    for ending in endings:
        buf = b""
        while not buf.endswith(ending):
            if time.monotonic() >= deadline:
                return False
            if not serial.in_waiting:
                time.sleep(0.01)
                continue
            b = serial.read(1)
            buf = (buf + b)[-len(ending):]
            heard.add(b)
    return True


def _enter_raw_repl(t, timeout):
    # -> None in a fresh raw REPL within `timeout` s, else why not. Ctrl-C stops what runs,
    # Ctrl-A asks for the raw REPL, Ctrl-D soft-resets into a new one (mpremote's own sequence,
    # with a deadline that holds however much the board sends).
    s = t.serial
    deadline = time.monotonic() + timeout
    heard = _Heard()
    s.write(b"\r\x03")
    time.sleep(0.05)
    s.read(s.in_waiting)             # once: a board that keeps sending would keep this busy
    s.write(b"\r\x01")
    ok = _read_to(s, [_RAW_BANNER + b">"], deadline, heard)
    if ok:
        s.write(b"\x04")
        ok = _read_to(s, [_SOFT_REBOOT, _RAW_BANNER], deadline, heard)
    if not ok:
        if heard.count:
            return ("it kept sending (%d bytes, the last: %r) but showed no raw REPL prompt within %d s: "
                    "what runs on it did not stop at Ctrl-C; take any part out of the jaw, then unplug "
                    "the board and plug it in again, and deploy" % (heard.count, heard.tail[-60:], timeout))
        return "no raw REPL prompt within %d s: is MicroPython flashed on it?" % timeout
    t.in_raw_repl = True
    return None


class RawReplBoard:
    # The board being deployed to, reached through mpremote's SerialTransport in the raw REPL.
    def __init__(self, port):
        self.port = port
        self.t = None
        self.watchdog_stopped_at = 0     # the WATCHDOG CTRL clear alias written at connect, or 0

    def connect(self, timeout=6):
        from mpremote.transport import TransportError
        from mpremote.transport_serial import SerialTransport

        from surepick.host.link import ports
        from surepick.host.link.errors import LinkError
        try:
            ports.check_not_busy(self.port)
        except LinkError as e:
            raise DeployError(str(e)) from None
        if not ports.is_url(self.port) and not os.path.exists(self.port):
            raise DeployError("no board on %s: the device does not exist%s" % (self.port, ports.bootsel_text()))
        for attempt in range(3):
            try:
                self.t = SerialTransport(self.port, baudrate=115200)
            except TransportError as e:
                holders = ports.holders_of(self.port)
                if holders:
                    raise DeployError(str(ports.busy_error(self.port, holders))) from None
                raise DeployError(_why_not_open(self.port, e)) from None
            # The virtual board answers a second client with a busy line and hangs up; a
            # client that was just killed may take a moment to be let go: try again briefly.
            early = self._early_bytes(0.15)
            if early is not None and ports.BUSY_TEXT not in early:
                break
            self.close()
            if attempt == 2:
                raise DeployError(str(ports.busy_error(self.port, ["another client"])))
            time.sleep(0.5)
        try:
            why = _enter_raw_repl(self.t, timeout)
        except Exception as e:  # the port vanished under us (pyserial's own errors)
            self.close()
            raise DeployError("no board on %s: %s" % (self.port, e)) from None
        if why:
            self.close()
            raise DeployError("the device on %s did not answer as a MicroPython REPL: %s" % (self.port, why))
        _, self.watchdog_stopped_at = _pyrepr_eval(self.exec(stop_watchdog_code()))

    def _early_bytes(self, wait):
        # What the port says on its own right after opening, or None if it hung up.
        s = self.t.serial
        got = b""
        end = time.monotonic() + wait
        try:
            while time.monotonic() < end:
                n = s.in_waiting
                if n:
                    got += s.read(n)
                else:
                    time.sleep(0.02)
        except Exception:  # pyserial: "socket disconnected"
            return None
        return got

    def close(self):
        if self.t is not None:
            try:
                self.t.close()
            except Exception:  # closing a port that already went away
                pass
            self.t = None

    def exec(self, code):
        from mpremote.transport import TransportExecError
        try:
            return self.t.exec(code)
        except TransportExecError as e:
            raise DeployError("the board raised an error:\n%s" % e.error_output.strip()) from None

    def info(self):
        return MicropythonInfo(_pyrepr_eval(self.exec(_INFO)))

    def hashes(self, paths, dirs):
        return _pyrepr_eval(self.exec(_HASHES % (sorted(paths), sorted(dirs))))

    def read_text(self, path):
        raw = self.exec("try:\n f=open(%r)\n print(repr(f.read()))\n f.close()\nexcept OSError:\n "
                        "print('None')" % path)
        return _pyrepr_eval(raw)

    def mkdirs(self, dirs):
        self.exec(_MKDIRS % (list(dirs),))

    def write(self, path, data, on_chunk=None):
        self.exec("_sp_f = open(%r, 'wb')" % path)
        for i in range(0, len(data), WRITE_CHUNK):
            self.exec("_sp_f.write(%r)" % (data[i:i + WRITE_CHUNK],))
            if on_chunk:
                on_chunk(min(i + WRITE_CHUNK, len(data)))
        self.exec("_sp_f.close()\ndel _sp_f")

    def install(self, pairs, remove, remove_first=()):
        self.exec(_INSTALL % (list(remove_first), list(pairs), list(remove)))

    def reset_and_wait_hello(self, timeout):
        # Leave the raw REPL, soft-reset from the friendly one (main.py runs), and read the
        # console until the firmware's HELLO frame. -> (hello fields or None, REPL text seen).
        from surepick.host.link.frames import FrameParser
        from surepick.shared_fsm import link
        text = bytearray()
        parser = FrameParser(on_text=text.extend)
        s = self.t.serial
        self.t.exit_raw_repl()
        time.sleep(0.05)
        s.write(b"\x04")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.timeout = 0.05
            data = s.read(s.in_waiting or 1)
            for f in parser.feed(data):
                if f.ftype == link.T_HELLO:
                    return f.fields, bytes(text)
        return None, bytes(text)
