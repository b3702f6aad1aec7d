# The virtual board: the firmware's own files run by the real unix `micropython` binary,
# served on a pty or a loopback TCP port so that mpremote (and our tools) see a Pico.
# The supervisor thread copies bytes both ways with poll() and emulates what the unix port
# lacks: soft reset (it exits where a Pico reboots), Ctrl-C as an interrupt, power cuts.
import os
import select
import signal
import tempfile
import threading
import time
from pathlib import Path

from surepick.host.source_tree import package_file
from surepick.host.vboard import chip_id
from surepick.host.vboard.console import Consoles, PtyConsole, TcpConsole, parse_listen
from surepick.host.vboard.control import ControlError, ControlServer, Registration
from surepick.host.vboard.interp import Interpreter, find_micropython
from surepick.host.vboard.runtime import Runtime
from surepick.host.vboard.lifetime import InterpreterLifetime
from surepick.host.vboard.stream import FRIENDLY, ReplModeTracker

# (real clock, an empty gripper) without one, so deployed firmware boots either way.
BOOT_SHIM = package_file("host", "vboard", "boot_shim.py")

# machine.reset_cause() values of the rp2 port (ports/rp2/modmachine.c).
PWRON_RESET = 1
WDT_RESET = 3

# How a boot came about. A soft reset leaves the hardware reset cause as it was.
POWER_ON, HARD, WATCHDOG, SOFT, CRASH = "power_on", "hard", "watchdog", "soft", "crash"

SOFT_REBOOT_MSG = b"MPY: soft reboot\r\n"  # rp2 main.c prints "MPY: soft reboot\n", cooked
# The interpreter's heap (-X heapsize). "Like a Pico" means: the firmware, imported and its App
# built, takes the share of the heap it takes on a Pico. MicroPython 1.28 RPI_PICO (rp2040js):
# heap 245,888 B, the firmware 167,216 B of it, 69.3 % of what code can use (74,240 B left).
# Here the same .mpy files take 213,920 B (64-bit objects are ~1.37x larger): 65.1 % of this heap
# of 357,248 B beside the board's own preloaded modules (tests/host/vboard/test_vboard_heap.py keeps
# the two shares within 10 % of each other).
# A heap of a Pico's bytes is not a Pico: with 64-bit objects the firmware would not fit at all.
HEAP = "353K"
_HIGH_WATER = 256 * 1024  # stop reading a side whose bytes the other side is not taking
_MARKER_WAIT_S = 0.02     # how long a possible marker start may be held back
_BOOT_LOOP_LIMIT = 5      # consecutive boots dying before boot.py ends -> skip boot/main
_TRANSCRIPT_MAX = 256 * 1024


def _model_identity(model, micropython):
    # -> (machine string, sys.implementation._mpy) a board of `model` reports; (None, 0) for none.
    if model is None:
        return None, 0
    from surepick.firmware.hal import rp2_chips
    from surepick.firmware.mpy_arch import mpy_with_arch
    from surepick.host.vboard.runtime import loads_mpy
    if model not in rp2_chips.MODELS:
        raise ValueError("unknown board model %r; one of %s" % (model, ", ".join(sorted(rp2_chips.MODELS))))
    board = rp2_chips.identify(rp2_chips.machine_string(model))
    version = loads_mpy(micropython, full=True)
    if version is None:
        raise RuntimeError("cannot read the .mpy version of %s" % micropython)
    return board.machine, mpy_with_arch(version, board.march)


class VirtualBoard:
    """A Pico stand-in: `with VirtualBoard(flash_dir) as b: print(b.address)`.

    flash_dir      host directory that is the board's root filesystem (survives resets);
                   None -> a new temporary directory (kept; see .flash_dir). It also keeps
                   the board's unique id (chip_id.py), so one flash directory is one board.
    pty            serve on a new pty (address = /dev/pts/N); with `listen` too, on both
    listen         "HOST:PORT" for TCP (default without pty: 127.0.0.1:0, a free loopback port)
    allow_remote   permit a non-loopback listen address
    world_service  object with start() -> (host, port) and stop(); its address is
                   vboard_settings.PLANT inside the board. reset_world() on it (if it has one)
                   is what the control channel's "reset-world" calls.
    scenario, seed passed into vboard_settings (SCENARIO, SEED) for the plant
    model          a Pico model (firmware/hal/rp2_chips.MODELS: "pico2", "pico_w", ...): the board
                   reports that board's machine string and native-code architecture, and has its
                   chip's registers behind machine.mem32 (vboard_model.py; the writes are in
                   .register_writes, the values in .registers). None: the unix port as it is.
                   Firmware compiled for that chip's native code cannot run here (an x86 host).
    micropython    path of the binary (default: the venv's, then PATH)
    heap           -X heapsize for the interpreter (default HEAP: the firmware takes the share
                   of it that it takes of a Pico's)
    control        serve the control channel (control.py) and list the board in the registry
    log            callable(str) for supervisor notes (resets, crashes); None = quiet
    on_fail        callable(exception), called from the supervisor thread if it stops
                   unexpectedly (e.g. the interpreter cannot boot at all); see .error
    """

    def __init__(self, flash_dir=None, *, pty=False, listen=None, allow_remote=False,
                 world_service=None, scenario=None, seed=None, model=None,
                 micropython=None, heap=None, log=None, on_fail=None, control=True):
        self.micropython = find_micropython(micropython)
        self.model = model
        self._machine, self._mpy = _model_identity(model, self.micropython)
        self.registers = {}         # the model's chip registers (address -> value), kept over soft resets
        self.register_writes = []   # every mem32 write of this board's life: (address, value)
        self.flash_is_temporary = flash_dir is None
        if flash_dir is None:
            flash_dir = tempfile.mkdtemp(prefix="surepick-flash-")
        self.flash_dir = Path(flash_dir).resolve()
        if not self.flash_dir.is_dir():
            raise FileNotFoundError("flash directory %s does not exist" % self.flash_dir)
        self._pty = pty
        self._listen = None if pty and listen is None else parse_listen(listen or "127.0.0.1:0",
                                                                          allow_remote)
        self._allow_remote = allow_remote
        self.world_service = world_service
        self.plant_address = None
        self.scenario = scenario
        self.seed = seed
        self.heap = HEAP if heap is None else heap
        self.unique_id = chip_id.unique_id(self.flash_dir)
        self._control_wanted = control
        self.control = None
        self._registration = None
        self._log = log or (lambda msg: None)
        self._on_fail = on_fail
        self.error = None

        self.console = None
        self.runtime = None
        self.boot_count = 0
        self.boot_kind = None
        self.reset_cause = PWRON_RESET
        self.safe_mode = False
        self._life = None
        self._tracker = ReplModeTracker()
        self._boot_failures = 0
        self._requests = []         # (reason, threading.Event) from other threads
        self._reset_waiters = []    # their Events, set when the next boot has started
        self._kill_reason = None    # why we killed the interpreter, until its exit is handled
        self._holding_since = None  # when output began ending in a possible marker start
        self._cond = threading.Condition()
        self._booted_at = 0         # boot_count whose boot.py has finished
        self._repl_at = 0           # boot_count whose REPL prompt has been shown
        self._transcript = bytearray()
        self._stopping = False
        self._thread = None
        self._wake_r = self._wake_w = -1

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self):
        if self._thread is not None:
            return self
        try:
            consoles = []
            if self._listen is not None:
                consoles.append(TcpConsole(*self._listen, self._allow_remote))
            if self._pty:
                try:
                    consoles.append(PtyConsole())
                except OSError as e:
                    if not consoles:
                        raise
                    self._log("no pty beside TCP (%s); serving TCP only" % e)
            self.console = consoles[0] if len(consoles) == 1 else Consoles(consoles)
            self.runtime = Runtime(self.micropython)
            if self.world_service is not None:
                self.plant_address = tuple(self.world_service.start())
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            self._boot(POWER_ON)
            if self._control_wanted:
                self.control = ControlServer({"status": self.status, "reset-world": self.reset_world,
                                              "look": self.look, **self._hands()})
                self._registration = Registration({
                    "console": self.addresses, "control": self.control.address, "kind": "virtual board",
                    "flash": str(self.flash_dir), "scenario": self.scenario, "seed": self.seed})
        except BaseException:
            self._teardown()
            raise
        self._thread = threading.Thread(target=self._loop, name="vboard", daemon=True)
        self._thread.start()
        return self

    def close(self):
        if self._thread is not None:
            with self._cond:
                self._stopping = True
            self._wake()
            self._thread.join()
            self._thread = None
        self._teardown()

    __enter__ = start

    def __exit__(self, *exc):
        self.close()

    @property
    def address(self):
        # What to hand to `mpremote connect`: /dev/pts/N or socket://127.0.0.1:PORT.
        return self.console.address

    @property
    def addresses(self):
        # Every address a client can connect to (TCP first when serving both).
        c = self.console
        return list(c.addresses) if isinstance(c, Consoles) else [c.address]

    @property
    def repl_mode(self):
        return self._tracker.mode

    @property
    def pid(self):
        s = self._life
        return s.interp.pid if s else None

    @property
    def sigints(self):
        # SIGINTs sent to this boot's interpreter (a Ctrl-C the firmware's loop read as a byte is none).
        s = self._life
        return s.sigints if s else 0

    def transcript(self):
        # Recent console output as a client would have seen it (kept even with no client).
        with self._cond:
            return bytes(self._transcript)

    # -- resets (callable from any thread) ---------------------------------------------------

    def power_cut(self):
        """Kill the interpreter now (SIGKILL), then boot as after power-on."""
        self._request(POWER_ON)

    def hard_reset(self):
        """RUN-pin reset: kill now, boot with machine.reset_cause() == PWRON_RESET."""
        self._request(HARD)

    def watchdog_reset(self):
        """Watchdog bite: kill now, boot with machine.reset_cause() == WDT_RESET."""
        self._request(WATCHDOG)

    def soft_reset(self):
        """As machine.soft_reset(): "MPY: soft reboot", same REPL mode, reset cause kept."""
        self._request(SOFT)

    # -- the world around the board (the control channel's commands; any thread) ----------------

    def status(self):
        ps = self.world_service
        out = {"console": self.addresses, "flash": str(self.flash_dir), "unique_id": self.unique_id,
               "model": self.model, "machine": self._machine,
               "boot_count": self.boot_count, "repl_mode": self.repl_mode,
               "scenario": self.scenario, "seed": self.seed}
        if ps is not None and hasattr(ps, "verdict"):
            out.update(world=getattr(ps, "cycle", 0), plant_ms=ps.now_ms,
                       verdict=list(ps.verdict()[:2]))
        return out

    def reset_world(self):
        """Put the world back as at the start of the scenario (the part respawned on its pad, the
        arm at home, the scenario's faults armed again) for its next cycle; the board runs on,
        as a bench where someone put the part back. -> {"world": N, "previous": [outcome, reason]}
        of the world before."""
        ps = self.world_service
        if ps is None or not hasattr(ps, "reset_world"):
            raise ControlError("this virtual board has no plant (start it with --scenario NAME)")
        previous = list(ps.verdict()[:2])
        try:
            world = ps.reset_world()
        except RuntimeError as e:
            raise ControlError(str(e)) from None
        self._log("world reset: world %d of %s (the previous one: %s)"
                  % (world, self.scenario, previous[0]))
        return {"world": world, "previous": previous}

    # ---- what a person at the bench sees and does (bring-up's stand-in operator) ----

    def _bench(self):
        ps = self.world_service
        if ps is None or not hasattr(ps, "look"):
            raise ControlError("this virtual board has no plant (start it with --scenario NAME)")
        return ps

    def look(self):
        """Where the arm physically is, as an eye or a camera on the bench sees it: each joint's
        angle (deg) and the jaw's opening (mm). Never the servos' calibration."""
        return self._bench().look()

    def _hands(self):
        # A hand on the bench (bench.py), applied by the plant between two ticks.
        from surepick.host.vboard import bench
        return bench.hand_handlers(lambda name, **kw: self._bench().inject(name, **kw))

    def _request(self, reason):
        done = threading.Event()
        with self._cond:
            if self._thread is None or self._stopping:
                raise RuntimeError("the virtual board is not running")
            self._requests.append((reason, done))
        self._wake()
        if not done.wait(30):
            raise TimeoutError("virtual board: the %s reset did not complete" % reason)

    # -- waiting -----------------------------------------------------------------------------

    def wait_booted(self, timeout=10.0, boot=None):
        """Block until the current boot (at least boot number `boot`) has run boot.py;
        main.py may be running now. Returns the boot number."""
        return self._wait_for(lambda: self._booted_at == self.boot_count >= (boot or 0),
                              timeout, "boot.py to finish")

    def wait_repl(self, timeout=10.0, boot=None):
        """Block until the current boot (at least number `boot`) shows its REPL prompt,
        i.e. main.py, if any, has ended. Returns the boot number."""
        return self._wait_for(lambda: self._repl_at == self.boot_count >= (boot or 0),
                              timeout, "the REPL")

    def _wait_for(self, pred, timeout, what):
        with self._cond:
            if not self._cond.wait_for(pred, timeout):
                raise TimeoutError("virtual board: no %s within %.1f s (boot %d)"
                                   % (what, timeout, self.boot_count))
            return self.boot_count

    # -- booting -----------------------------------------------------------------------------

    def _settings(self):
        return {
            "BOARD": "surepick-vboard",
            "BOOT_COUNT": self.boot_count,
            "BOOT_KIND": self.boot_kind,
            "RESET_CAUSE": self.reset_cause,
            "PWRON_RESET": PWRON_RESET,
            "WDT_RESET": WDT_RESET,
            "PLANT": self.plant_address,
            "SCENARIO": self.scenario,
            "SEED": self.seed,
            "UNIQUE_ID": self.unique_id,
            "MACHINE": self._machine,
            "MPY": self._mpy,
            "REGISTERS": tuple(sorted(self.registers.items())),
        }

    def _boot(self, kind, mode=FRIENDLY):
        if kind != SOFT:
            self.reset_cause = WDT_RESET if kind == WATCHDOG else PWRON_RESET
            self.registers = {}     # every register back to its reset value (0 here)
            self._tracker.reset()
            mode = FRIENDLY
        self.boot_count += 1
        self.boot_kind = kind
        self.runtime.write_settings(self._settings())
        env = {k: v for k, v in os.environ.items() if k != "MICROPYPATH"}
        env.update(VBOARD_FLASH=str(self.flash_dir), VBOARD_RUNTIME=str(self.runtime.path),
                   VBOARD_RUN_MAIN="1" if mode == FRIENDLY else "0",
                   VBOARD_SAFE="1" if self.safe_mode else "0")
        argv = [self.micropython]
        if self.heap:
            argv += ["-X", "heapsize=" + self.heap]
        argv += ["-i", str(BOOT_SHIM)]
        self._life = InterpreterLifetime(Interpreter(argv, env, cwd=str(self.runtime.path)), mode, self._tracker,
                                on_register=self._register_written)
        self._log("boot %d (%s, %s REPL%s), pid %d" % (self.boot_count, kind, mode,
                  ", safe mode" if self.safe_mode else "", self._life.interp.pid))

    def _register_written(self, addr, value):
        # The board wrote a register (vboard_model.Registers, which applied the alias there too).
        with self._cond:
            self.register_writes.append((addr, value))
            reg, alias = addr, 0
            if 0x40000000 <= addr < 0x60000000:
                reg, alias = addr & ~0x3000, addr & 0x3000
            old = self.registers.get(reg, 0)
            self.registers[reg] = {0x1000: old ^ value, 0x2000: old | value,
                                   0x3000: old & ~value}.get(alias, value)

    def _on_exit(self):
        s = self._life
        self._emit(s.flush())
        rc = s.interp.reap()
        s.interp.close()
        self._life = None
        if self._stopping:
            return
        reason = self._kill_reason or s.reset_request
        requested = self._kill_reason is not None
        self._kill_reason = None
        if reason is None:
            # The unix port exits where a Pico soft-resets: Ctrl-D at an empty prompt, an
            # uncaught SystemExit, machine.soft_reset(). A signal we did not send is a crash,
            # except SIGINT, which can only be ours arriving just as code finished.
            reason = SOFT if rc >= 0 or rc == -signal.SIGINT else CRASH
            if reason == CRASH:
                self._log("interpreter died from signal %d; rebooting as after power-on" % -rc)
        if not requested and not s.booted:
            self._boot_failures += 1
        else:
            self._boot_failures = 0
        if self._boot_failures >= 2 * _BOOT_LOOP_LIMIT:
            raise RuntimeError("the interpreter died %d times in a row before finishing boot, "
                               "even without boot.py and main.py (see the console output)"
                               % self._boot_failures)
        if self._boot_failures >= _BOOT_LOOP_LIMIT and not self.safe_mode:
            self.safe_mode = True
            self._emit(b"\r\nsurepick-board: %d boots in a row died before boot.py ended; skipping "
                       b"boot.py and main.py until the next power cut or hard reset\r\n"
                       % self._boot_failures)
        if requested and reason in (POWER_ON, HARD, WATCHDOG):
            self.safe_mode = False
            self._boot_failures = 0
        if reason not in (POWER_ON, HARD, WATCHDOG, CRASH):
            reason = SOFT
        if reason == SOFT:
            self._emit(SOFT_REBOOT_MSG)
        if reason != POWER_ON:
            self._servos_lose_pwm()
        self._boot(reason, self._tracker.mode)
        for done in self._reset_waiters:
            done.set()
        self._reset_waiters = []

    def _servos_lose_pwm(self):
        # A Pico's PWM stops in any reset, a soft one too (machine_pwm_deinit_all): the servos go
        # limp until the next boot starts them. The plant hears of it (a power cut it caused
        # itself it knows already).
        ps = self.world_service
        if ps is not None and hasattr(ps, "board_reset"):
            ps.board_reset()

    # -- the supervisor loop -----------------------------------------------------------------

    def _wake(self):
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def _emit(self, data):
        if not data:
            return
        with self._cond:
            self._transcript += data
            del self._transcript[:-_TRANSCRIPT_MAX]
        self.console.write(data)

    def _take_requests(self):
        with self._cond:
            requests, self._requests = self._requests, []
        for reason, done in requests:
            if self._kill_reason is None:
                self._kill_reason = reason
                self._life.interp.kill()
            # Released once the next boot has started, so boot_count has moved on by then.
            self._reset_waiters.append(done)

    def _loop(self):
        try:
            while not self._stopping:
                self._take_requests()
                self._step()
        except Exception as e:  # a dead supervisor is a dead board: say why, tell the owner
            self.error = e
            self._log("virtual board stopped: %s" % (e,))
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
            if self._on_fail is not None:
                self._on_fail(e)

    def _step(self):
        s = self._life
        interp = s.interp
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        events = 0
        if self.console.backlog < _HIGH_WATER:
            events |= select.POLLIN
        if interp.inq:
            events |= select.POLLOUT
        poller.register(interp.fd, events)
        console_fds = set()
        for fd, ev in self.console.poll_items(want_input=s.queued < _HIGH_WATER):
            poller.register(fd, ev)
            console_fds.add(fd)
        timeouts = [t for t in (self.console.timeout(), _MARKER_WAIT_S if s.holding else None,
                                s.ctrl_c_wait()) if t is not None]
        ready = poller.poll(1000 * min(timeouts) if timeouts else None)

        got_output = False
        for fd, ev in ready:
            if fd == self._wake_r:
                while True:
                    try:
                        if not os.read(self._wake_r, 512):
                            break
                    except BlockingIOError:
                        break
            elif fd == interp.fd:
                if ev & select.POLLOUT:
                    interp.write_pending()
                if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    data = interp.read()
                    if data:
                        got_output = True
                        self._emit(s.output(data))
            elif fd in console_fds:
                data = self.console.handle(fd, ev)
                if data:
                    s.client_input(data)
        self.console.tick()
        s.check_ctrl_c()
        if not s.holding or got_output:
            self._holding_since = None
        elif self._holding_since is None:
            self._holding_since = time.monotonic()
        elif time.monotonic() - self._holding_since >= _MARKER_WAIT_S:
            self._holding_since = None
            self._emit(s.flush())
        if s.reset_request and self._kill_reason is None:
            interp.kill()  # the board asked (sys.exit in main.py, vboard_ctl.reset)
        if interp.eof:
            self._on_exit()
        if self._life is not None and self._life.booted:
            self._note_progress(self._life)

    def _note_progress(self, s):
        with self._cond:
            changed = False
            if s.booted and self._booted_at != self.boot_count:
                self._booted_at = self.boot_count
                changed = True
            if s.prompted and self._repl_at != self.boot_count:
                self._repl_at = self.boot_count
                changed = True
            if changed:
                self._cond.notify_all()

    def _teardown(self):
        if self._registration is not None:
            self._registration.remove()
            self._registration = None
        if self.control is not None:
            self.control.close()
            self.control = None
        if self._life is not None:
            self._life.interp.close()
            self._life = None
        for done in self._reset_waiters + [d for _, d in self._requests]:
            done.set()
        if self.console is not None:
            self.console.close()
        if self.world_service is not None and self.plant_address is not None:
            self.world_service.stop()
            self.plant_address = None
        if self.runtime is not None:
            self.runtime.cleanup()
            self.runtime = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
