# One run of the interpreter, from spawn to exit: follows the boot step's markers, turns a
# client's Ctrl-C into what a Pico would do at that moment, sends line endings as a Pico does
# (stream.LineEndings), and (after a soft reset from the raw REPL) quietly walks the fresh
# interpreter's friendly REPL into the raw one.
import time

from surepick.host.vboard.stream import (FRIENDLY, RAW, RAW_BANNER, LineEndings, MarkerFilter,
                                    UntilBanner)

CTRL_A = b"\x01"
CTRL_C = b"\x03"

STARTING = "starting"  # process up, flash not mounted yet
BOOT = "boot"          # inside the boot step (boot.py, main.py)
REPL = "repl"          # the REPL: SIGINT only while it runs code, else the byte itself
# Before the REPL a Ctrl-C is a byte for main.py's loop (_send_ctrl_c_byte says why), or, when
# the boot runs boot.py alone (raw REPL), a SIGINT once the flash is mounted ("fs").

# mpremote sends "\r\x03\x03"; a second SIGINT before the first is handled makes the unix
# port exit(1) (ports/unix/unix_mphal.c), so Ctrl-Cs this close together count once.
_COALESCE_S = 0.2
# A Ctrl-C given to the firmware's loop as a byte: a loop that reads the console does so every
# tick, well inside this much of its CPU time; one that has used more without reading it is
# stuck in code that does not read, and gets the SIGINT after all. The wall-clock bound is for
# a process that waits (asleep, or on a bench that stopped answering) instead of running;
# mpremote waits 10 s for the raw REPL.
_BYTE_CPU_S = 0.1
_BOOT_CPU_S = 1.0      # before the loop: the firmware's boot takes about 0.08 s
_BYTE_WALL_S = 3.0
_PROMPTS = {FRIENDLY: b">>> ", RAW: b"\r\n>"}


class InterpreterLifetime:
    def __init__(self, interp, mode, tracker, on_register=None):
        self.interp = interp
        self.on_register = on_register   # (address, value) of each register the board writes
        self.mode = mode            # REPL this boot must end in: "friendly" or "raw"
        self.tracker = tracker
        self.phase = STARTING
        self.booted = False         # boot.py done ("booted" marker)
        self.reset_request = None   # "soft" / "hard" / "watchdog" asked for from the board
        self.sigints = 0
        self.prompted = False       # the REPL this boot ends in has shown its prompt
        self._since_repl = b""
        self._markers = MarkerFilter()
        self._eol = LineEndings()
        self._pending_ctrl_c = False
        self._last_sigint = -1e9
        self.loop_reads_ctrl_c = False   # the firmware's loop runs and stops at a Ctrl-C byte
        self._ctrl_c_byte = None    # (wall s, CPU s) when sent, until the loop stops at it
        # Raw target: client bytes wait until CTRL-A has been queued ahead of them.
        self._held = bytearray() if mode == RAW else None
        self._to_raw = UntilBanner(RAW_BANNER) if mode == RAW else None

    # -- client -> interpreter --------------------------------------------------------------

    def client_input(self, data):
        parts = data.split(CTRL_C)
        for i, part in enumerate(parts):
            if i:
                self._ctrl_c()
            if part:
                self._queue(part)

    def _queue(self, data):
        if self._held is not None:
            self._held += data
        else:
            self.interp.inq += data

    @property
    def queued(self):
        return len(self.interp.inq) + (len(self._held) if self._held is not None else 0)

    def _ctrl_c(self):
        if self.phase == STARTING and self.mode == RAW:
            # Input sent before the Ctrl-C goes now, as a Pico empties its buffer; what comes
            # after it (mpremote's Ctrl-A) must reach the REPL the signal ends up in.
            self._flush()
            self._pending_ctrl_c = True
        elif self.phase in (STARTING, BOOT) and (self.mode == FRIENDLY or self.loop_reads_ctrl_c):
            self._send_ctrl_c_byte()     # main.py runs (or will): the firmware's loop reads it
        elif self.phase == BOOT or self.interp.interrupt_enabled():
            self._sigint()
        else:
            self._queue(CTRL_C)  # at a prompt the REPL reads it, as on a Pico

    def _send_ctrl_c_byte(self):
        # The firmware's loop reads the console every tick and raises KeyboardInterrupt at this
        # byte (cmdparse.poll): between two of its own statements, as a Pico raises the one its
        # USB stack schedules. A SIGINT instead makes the unix port raise from inside whatever C
        # code runs (it is built with MICROPY_ASYNC_KBD_INTR): one that lands in an allocation
        # leaves the heap locked for good ("memory allocation failed, heap is locked", then
        # "FATAL: uncaught NLR"), and one during the boot's imports was lost outright. Bytes
        # before it go, as a Pico empties its input at Ctrl-C. Sent before the loop runs, it
        # waits for the loop's first tick: the boot ends first, as when a Pico's Ctrl-C comes
        # a moment later.
        now = time.monotonic()
        if now - self._last_sigint < _COALESCE_S:
            return
        self._last_sigint = now
        self._flush()
        self.interp.inq += CTRL_C
        self._ctrl_c_byte = (now, self.interp.cpu_s())

    def ctrl_c_wait(self):
        # -> s until check_ctrl_c() should look again, None when no Ctrl-C byte is pending.
        return None if self._ctrl_c_byte is None else _BYTE_CPU_S / 2

    def check_ctrl_c(self):
        # A Ctrl-C byte is done with once the loop says it stopped ("stop", its shutdown) or
        # main.py has ended ("repl": the REPL reads the byte at its prompt). Still pending once
        # the process has used its CPU budget (_BYTE_CPU_S while the loop runs, _BOOT_CPU_S
        # before: the boot's own work), or after _BYTE_WALL_S: a SIGINT, as a Pico's Ctrl-C
        # stops code that never reads the console. The byte stays queued ahead of what came
        # after it (the REPL takes it as a Ctrl-C at its prompt: a fresh line).
        if self._ctrl_c_byte is None:
            return
        t0, cpu0 = self._ctrl_c_byte
        cpu = self.interp.cpu_s()
        ran = cpu - cpu0 if cpu is not None and cpu0 is not None else 0.0
        budget = _BYTE_CPU_S if self.loop_reads_ctrl_c else _BOOT_CPU_S
        if ran >= budget or time.monotonic() - t0 >= _BYTE_WALL_S:
            self._ctrl_c_byte = None
            self.loop_reads_ctrl_c = False
            self._interrupt()

    def _interrupt(self):
        self._last_sigint = time.monotonic()
        self.interp.interrupt()
        self.sigints += 1

    def _sigint(self, flush=True):
        if time.monotonic() - self._last_sigint < _COALESCE_S:
            return
        if flush:
            self._flush()
        self._interrupt()

    def _flush(self):
        self.interp.flush_input()
        if self._held is not None:
            self._held.clear()

    # -- interpreter -> client --------------------------------------------------------------

    def output(self, data):
        # -> the bytes the client should see.
        out = []
        for kind, value in self._markers.feed(data):
            if kind == "mark":
                self._mark(value)
            else:
                out.append(self._data(value))
        return b"".join(out)

    @property
    def holding(self):
        return self._markers.holding

    def flush(self):
        # Output went quiet (or the process ended) with a possible marker start held back.
        return self._data(self._markers.flush())

    def _data(self, data):
        data = self._eol.feed(data)
        self.tracker.feed(data)
        if self._to_raw is not None and self.booted:
            data = self._to_raw.feed(data)
        if self.phase == REPL and not self.prompted and data:
            s = self._since_repl + data
            self.prompted = _PROMPTS[self.mode] in s
            self._since_repl = s[-8:]
        return data

    def _mark(self, name):
        if name == "fs":
            self.phase = BOOT
            if self._pending_ctrl_c:
                self._pending_ctrl_c = False
                self._sigint(flush=False)        # flushed when the Ctrl-C came
        elif name == "booted":
            self.booted = True
            if self._held is not None:
                # The banner and ">>> " the fresh REPL prints are swallowed until the raw one.
                self.interp.inq += CTRL_A + self._held
                self._held = None
        elif name == "repl":
            self.phase = REPL
            self.loop_reads_ctrl_c = False
            self._ctrl_c_byte = None
        elif name == "loop":
            self.loop_reads_ctrl_c = self.phase == BOOT
            if self._ctrl_c_byte is not None:      # sent during the boot: the loop's budget from now
                self._ctrl_c_byte = (time.monotonic(), self.interp.cpu_s())
        elif name == "stop":
            self.loop_reads_ctrl_c = False      # the loop stopped (at the byte): its shutdown runs
            self._ctrl_c_byte = None
        elif name == "rawline":
            self._eol.raw_line()
        elif name.startswith("reg:"):
            try:
                addr, value = (int(x, 16) for x in name[len("reg:"):].split(":"))
            except ValueError:
                return                   # not one of ours: ignored, as any unknown marker
            if self.on_register is not None:
                self.on_register(addr, value)
        elif name.startswith("reset:"):
            self.reset_request = name[len("reset:"):]
