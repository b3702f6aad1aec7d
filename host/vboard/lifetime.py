# One run of the interpreter, from spawn to exit: follows the boot step's markers, turns a
# client's Ctrl-C into what a Pico would do at that moment, sends line endings as a Pico does
# (stream.LineEndings), and (after a soft reset from the raw REPL) quietly walks the fresh
# interpreter's friendly REPL into the raw one.
import time

from surepick.host.vboard.stream import (FRIENDLY, RAW, RAW_BANNER, LineEndings, MarkerFilter,
                                    UntilBanner)

CTRL_A = b"\x01"
CTRL_C = b"\x03"

STARTING = "starting"  # process up, flash not mounted yet: a Ctrl-C waits for "fs"
BOOT = "boot"          # inside the boot step (boot.py, main.py): a Ctrl-C is always SIGINT
REPL = "repl"          # the REPL: SIGINT only while it runs code, else the byte itself

# mpremote sends "\r\x03\x03"; a second SIGINT before the first is handled makes the unix
# port exit(1) (ports/unix/unix_mphal.c), so Ctrl-Cs this close together count once.
_COALESCE_S = 0.2
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
        if self.phase == STARTING:
            # Input sent before the Ctrl-C goes now, as a Pico empties its buffer; what comes
            # after it (mpremote's Ctrl-A) must reach the REPL the signal ends up in.
            self._flush()
            self._pending_ctrl_c = True
        elif self.phase == BOOT or self.interp.interrupt_enabled():
            self._sigint()
        else:
            self._queue(CTRL_C)  # at a prompt the REPL reads it, as on a Pico

    def _sigint(self, flush=True):
        now = time.monotonic()
        if now - self._last_sigint < _COALESCE_S:
            return
        self._last_sigint = now
        if flush:
            self._flush()
        self.interp.interrupt()
        self.sigints += 1

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
