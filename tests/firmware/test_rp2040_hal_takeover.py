# The Pico's HAL (firmware/hal/rp2040.py) on the real MicroPython RP2040 image in rp2040js (the
# emulated chip: its watchdog, GPIO interrupts and PWM are the chip's), for what the REPL takeover
# relies on and no stand-in can show:
#   - wdt_stop() really stops the RP2040's watchdog (CTRL.ENABLE through the clear alias): an
#     unfed watchdog resets the chip, a stopped one does not, through a soft reset too;
#   - the deploy's first step at the raw REPL stops a watchdog left running, at the RP2040's address
#     the chip's own machine string leads it to;
#   - guard_estop(): a press on the e-stop pin (a rising edge from the plant side) freezes every
#     servo's PWM at the pulse it had, refuses the HAL's writes and undoes REPL code writing the
#     PWM directly within a servo frame.
# Slow: the chip runs about 6-7 host CPU seconds per emulated second.
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.host.engines.rp2040 import Chip

from tests.support.rp2040 import chip_image

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"
PKG = REPO
# The modules hal/rp2040.py needs, as source.
FILES = ("shared_fsm/__init__.py", "shared_fsm/compat.py", "shared_fsm/ticks.py",
         "firmware/__init__.py", "firmware/hal/__init__.py", "firmware/hal/contract.py",
         "firmware/hal/rp2040.py", "firmware/hal/rp2_chips.py")

SETUP = """\
import time
from surepick.firmware.hal import rp2040 as h
class Pins:
    servo = (2, 3, 4, 5, 6)
    estop, switch, beam, led = 13, 14, 15, 25
    adc_pot, adc_current, adc_rail = 0, 1, 2
h.setup(Pins())
h.pwm_start([1500, 1400, 1300, 1200, 1100])
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def uf2():
    return chip_image()


def mpremote(address, *args, timeout=300):
    proc = subprocess.run([MPREMOTE, "connect", address, *args], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.replace("\r\n", "\n")


def install(address):
    args = []
    for d in ("lib", "lib/surepick", "lib/surepick/shared_fsm", "lib/surepick/firmware",
              "lib/surepick/firmware/hal"):
        args += ["fs", "mkdir", ":" + d, "+"]
    for f in FILES:
        args += ["fs", "cp", str(PKG / f), ":lib/surepick/" + f, "+"]
    mpremote(address, *args[:-1])


def test_wdt_stop_stops_the_chips_watchdog(uf2):
    with Chip(uf2).start() as c:
        install(c.address)
        # unfed: the chip resets (the control that shows the watchdog is real)
        mpremote(c.address, "exec", SETUP + "h.wdt_start(300)\n", timeout=300)
        c.run(ms=600)
        assert c.state()["resets"] == 1
        # fed for a while, then stopped: no reset, not even across a soft reset (no loop feeds it
        # in the raw REPL mpremote works in)
        out = mpremote(c.address, "exec", SETUP + "h.wdt_start(300)\nfor _ in range(5):\n"
                       "    time.sleep_ms(100)\n    h.wdt_feed()\nh.wdt_stop()\ntime.sleep_ms(700)\n"
                       "print('ALIVE')\n")
        assert "ALIVE" in out
        mpremote(c.address, "soft-reset")
        c.run(ms=700)
        assert c.state()["resets"] == 1


def test_estop_at_the_repl_freezes_the_pwm(uf2):
    with Chip(uf2).start() as c:
        install(c.address)
        c.set(pins={13: 0})                                  # e-stop contact closed: run
        mpremote(c.address, "exec", SETUP + "h.guard_estop()\nh.set_pulse_us(0, 1600)\n")
        assert round(c.pwm()["pulse_us"][2]) == 1600         # REPL code moves a servo: allowed
        c.set(pins={13: 1})                                  # pressed (the pull-up wins)
        c.run(ms=50)
        # the HAL's writes are refused, and a direct PWM write is undone within a servo frame
        out = mpremote(c.address, "resume", "exec",
                       "h.set_pulse_us(0, 1700)\nh.set_pulse_us(4, 900)\nimport machine\n"
                       "machine.PWM(machine.Pin(3)).duty_ns(2000000)\ntime.sleep_ms(60)\n"
                       "print('HELD', h._held)\n")
        assert "HELD [1600, 1400, 1300, 1200, 1100]" in out, out
        c.set(pins={13: 0})                                  # released: still frozen (latched)
        c.run(ms=60)
        pulses = c.pwm()["pulse_us"]
        assert [round(pulses[g]) for g in (2, 3, 4, 5, 6)] == [1600, 1400, 1300, 1200, 1100], pulses


def test_deploy_stops_a_watchdog_left_running(uf2):
    # What a crashed firmware leaves: a watchdog nobody feeds. The deploy's connect stops it at the
    # address the board's machine string leads to (the RP2040's CTRL clear alias, pico-sdk
    # addressmap.h WATCHDOG_BASE 0x40058000 + REG_ALIAS_CLR_BITS 0x3000), and the chip runs on.
    from surepick.host.deploy.raw_repl import RawReplBoard
    with Chip(uf2).start() as c:
        out = mpremote(c.address, "exec", "import machine\nw = machine.WDT(timeout=1000)\n"
                       "print('ENABLE', machine.mem32[0x40058000] >> 30 & 1)\n")
        assert "ENABLE 1" in out, out
        t = RawReplBoard(c.address)
        t.connect(300)
        try:
            assert t.watchdog_stopped_at == 0x4005B000
            assert t.info().board.chip == "RP2040"
        finally:
            t.close()
        c.run(ms=1500)
        assert c.state()["resets"] == 0


def test_the_hal_identifies_the_pico_and_drives_its_led(uf2):
    # The RPI_PICO image says "Raspberry Pi Pico with RP2040": the HAL takes the RP2040's table
    # and drives the LED on GP25 (pico-sdk boards/pico.h PICO_DEFAULT_LED_PIN 25).
    with Chip(uf2).start() as c:
        install(c.address)
        out = mpremote(c.address, "exec", SETUP + "print('BOARD', h.BOARD.key, h.BOARD.chip)\nh.led(True)\n")
        assert "BOARD pico RP2040" in out, out
        s = c.state()
        assert s["gpio_oe"] >> 25 & 1 and s["gpio_level"] >> 25 & 1, s
        mpremote(c.address, "resume", "exec", "h.led(False)\n")
        s = c.state()
        assert s["gpio_oe"] >> 25 & 1 and not s["gpio_level"] >> 25 & 1, s
