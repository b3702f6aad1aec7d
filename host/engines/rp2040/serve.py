# `surepick board --engine rp2040`: the emulated RP2040 served as a Pico on a loopback socket or
# a pty, for mpremote, deploy, monitor and job. Its flash starts with the firmware installed (a
# flash image built as deploy would install it; bare=True: MicroPython only, for trying
# `surepick deploy`), or from a saved image (--flash FILE, written back when it stops).
#
# With a scenario its pins are wired to that scenario's world (wiring.py) and a thread steps
# chip and world in lockstep emulated time, one control period at a time, as fast as the host
# emulates (several times slower than real time); serial bytes reach the chip between periods.
# Without one, the chip runs freely (never ahead of the wall clock), pins at their pulls.
#
# With a scenario it also serves a control channel (vboard/control.py) with the bench a person
# sees and acts on, the virtual board's own (vboard/bench.py): "look", "status", and the hands
# (e-stop, finger switch, beam, the part off its pad), applied between two periods. So
# `surepick bringup --operator sim` runs against the chip as against the virtual board.
import os
import tempfile
import threading

from surepick.host.engines.rp2040 import flashimage
from surepick.host.engines.rp2040.chip import Chip


class ChipBoard:
    def __init__(self, uf2=None, flash=None, pty=False, listen="127.0.0.1:0", scenario=None, seed=0,
                 bare=False, log=None, arm=None):
        self.uf2 = uf2
        self.arm = arm            # the world's arm and the new image's /arm.json (engines/board_arm.py)
        self.flash = flash
        self.pty = pty
        self.listen = listen
        self.scenario = scenario
        self.seed = int(seed or 0)
        self.bare = bare
        self.log = log or (lambda s: None)
        self.chip = None
        self.world = None
        self.error = None
        self._tmp = None
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()       # the world between two periods
        self._hands = []                    # (injection, kwargs) to apply before the next period
        self.control = None

    @property
    def address(self):
        return self.chip.address

    def _image(self):
        # -> (image to start from, where to save the flash on exit)
        from surepick.host.engines import board_arm
        if self.flash and os.path.exists(self.flash):
            self.arm = board_arm.for_image(self.flash, self.arm)
            return self.flash, self.flash
        self._tmp = tempfile.TemporaryDirectory(prefix="surepick-rp2040-board-")
        start = None
        if not self.bare:
            start = os.path.join(self._tmp.name, "firmware-flash.bin")
            flashimage.build(start, extra=board_arm.image_files(self.arm))
        return start, self.flash

    def start(self):
        from surepick.sim.world import World
        image, save = self._image()
        lockstep = self.scenario is not None
        self.chip = Chip(self.uf2, flash=image, save_flash=save, pty=self.pty, listen=self.listen,
                         lockstep=lockstep, log=None)
        self.chip.start(wait_usb=not lockstep)
        if lockstep:
            from surepick.host.engines.rp2040.wiring import WiredChip
            self.world = World(self.scenario, None, self.seed, 0, arm=self.arm)
            self.wired = WiredChip(self.chip, self.world, arm=self.arm)
            self._thread = threading.Thread(target=self._run, name="rp2040-plant", daemon=True)
            self._thread.start()
            self._serve_control()
        return self

    def _serve_control(self):
        from surepick.host.vboard import bench
        from surepick.host.vboard.control import ControlServer

        def queue(name, **kw):
            with self._lock:
                self._hands.append((name, kw))

        def look():
            with self._lock:
                return bench.look(self.world.plant, self.world.now_ms)

        def status():
            with self._lock:
                return {"console": [self.address], "scenario": self.scenario, "seed": self.seed,
                        "plant_ms": self.world.now_ms, "verdict": list(self.world.verdict()[:2])}
        self.control = ControlServer({"look": look, "status": status, **bench.hand_handlers(queue)})

    def _run(self):
        try:
            while not self._stop.is_set():
                with self._lock:
                    hands, self._hands = self._hands, []
                    for name, kw in hands:
                        self.world.inject(name, **kw)
                    self.wired.step()
        except Exception as e:      # the engine died or the chip halted: say so, stop serving
            if not self._stop.is_set():
                self.error = e
                self.log("the emulated chip stopped: %s" % e)

    def wait_firmware(self, timeout=180.0):
        # -> True once the firmware speaks on the serial port (its HELLO or TELEMETRY), False
        # after `timeout`: the chip boots MicroPython and then the firmware, seconds after the
        # engine is up, and a tool that connects in between finds a REPL. Only listens: nothing
        # is sent to the chip.
        import time

        from surepick.host.link import hub_client
        from surepick.host.link.client import LinkClient
        from surepick.host.link.errors import LinkError
        from surepick.shared_fsm import link
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.running:
            try:
                with LinkClient(self.address, hub=hub_client.DIRECT) as c:
                    while time.monotonic() < end and self.running:
                        for f in c.read_frames(0.2):
                            if f.ftype in (link.T_HELLO, link.T_TELEMETRY):
                                return True
            except LinkError:
                time.sleep(0.5)          # the serial port is not up yet
        return False

    @property
    def running(self):
        return self.chip is not None and self.chip.running and self.error is None

    def close(self):
        self._stop.set()
        if self.control is not None:
            self.control.close()
            self.control = None
        if self._thread is not None:
            self._thread.join(30)
        if self.chip is not None:
            self.chip.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
