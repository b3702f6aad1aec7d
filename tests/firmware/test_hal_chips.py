# Chip identification and each chip's registers and pins, against sources independent of
# surepick: the numbers below are typed from the pico-sdk's headers and MicroPython's sources
# (cited per value), never read from firmware/hal/rp2_chips.py.
#
#   raspberrypi/pico-sdk 1f1c341a9af261d361aafa72f8ee00badf85b137
#     src/rp2040/hardware_regs/include/hardware/regs/addressmap.h  WATCHDOG_BASE 0x40058000
#     src/rp2350/hardware_regs/include/hardware/regs/addressmap.h  WATCHDOG_BASE 0x400d8000,
#                                                                  PLL_USB_BASE 0x40058000
#     both addressmap.h: REG_ALIAS_CLR_BITS (0x3 << 12), REG_ALIAS_SET_BITS (0x2 << 12)
#     src/rp2350/.../watchdog.h (abc24f1f), src/rp2040/.../watchdog.h (87e92917):
#                                                   WATCHDOG_CTRL_OFFSET 0, WATCHDOG_CTRL_ENABLE_BITS 0x40000000
#     src/boards/include/boards/pico2_w.h: CYW43_DEFAULT_PIN_WL_REG_ON 23, WL_DATA_OUT/IN 24,
#                                          WL_CS 25, WL_CLOCK 29; LED on the wireless chip
#     src/boards/include/boards/pico2.h (2da16877): PICO_DEFAULT_LED_PIN 25
#   micropython/micropython
#     ports/rp2/mpconfigport.h: MICROPY_HW_MCU_NAME "RP2040" / "RP2350" / "RP2350-RISCV"
#     ports/rp2/boards/RPI_PICO2/mpconfigboard.h "Raspberry Pi Pico2",
#     RPI_PICO_W "Raspberry Pi Pico W", RPI_PICO2_W "Raspberry Pi Pico 2 W"
#     py/persistentcode.h MP_NATIVE_ARCH_ARMV6M 4, ARMV7EMSP 7, RV32IMC 11
import json

import pytest

from tests.support import mpy as host_helpers
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.rp2_machine import stand_in_dir

from surepick.firmware import settings
from surepick.firmware.hal import rp2_chips

ENABLE = 0x40000000
CLR, SET = 0x3000, 0x2000
RP2040_WATCHDOG, RP2350_WATCHDOG, RP2350_PLL_USB = 0x40058000, 0x400D8000, 0x40058000

# machine string -> (chip, wireless, WATCHDOG_BASE, -march, .mpy arch number)
BOARDS = {
    "Raspberry Pi Pico with RP2040": ("RP2040", 0, RP2040_WATCHDOG, "armv6m", 4),
    "Raspberry Pi Pico W with RP2040": ("RP2040", 1, RP2040_WATCHDOG, "armv6m", 4),
    "Raspberry Pi Pico2 with RP2350": ("RP2350", 0, RP2350_WATCHDOG, "armv7emsp", 7),
    "Raspberry Pi Pico 2 W with RP2350": ("RP2350", 1, RP2350_WATCHDOG, "armv7emsp", 7),
    "Raspberry Pi Pico2 with RP2350-RISCV": ("RP2350-RISCV", 0, RP2350_WATCHDOG, "rv32imc", 11),
    "Raspberry Pi Pico 2 W with RP2350-RISCV": ("RP2350-RISCV", 1, RP2350_WATCHDOG, "rv32imc", 11),
}


@pytest.mark.parametrize("machine", sorted(BOARDS))
def test_identify_each_board(machine):
    chip, wireless, base, march, arch = BOARDS[machine]
    b = rp2_chips.identify(machine)
    assert (b.chip, b.wireless, b.watchdog_base, b.march) == (chip, wireless, base, march)
    assert b.watchdog_ctrl_clear() == base + CLR
    from surepick.firmware.mpy_arch import MPY_ARCHES
    assert MPY_ARCHES.index(march) == arch
    assert b.adc_gpio0 == 26                    # ADC0 on GP26 on the RP2040 and the RP2350A
    assert b.led_is_radio(25) == bool(wireless) and not b.led_is_radio(16)


def test_models_report_the_machine_strings_micropython_builds():
    assert sorted(rp2_chips.machine_string(m) for m in rp2_chips.MODELS) == sorted(BOARDS)


@pytest.mark.parametrize("machine", ["linux [GCC 14.2.1] version", "", "Some Board with RP2999",
                                     "Adafruit Feather RP2040 with RP2040"])
def test_an_unknown_board_or_chip_writes_nothing_it_cannot_place(machine):
    b = rp2_chips.identify(machine)
    if machine.endswith("with RP2040"):
        # a third-party board on a known chip: the chip's registers, the LED where the map says
        assert b.chip == "RP2040" and b.watchdog_ctrl_clear() == RP2040_WATCHDOG + CLR
        assert b.key is None and not b.led_is_radio(25)
    else:
        assert b.chip is None and b.watchdog_ctrl_clear() == 0 and b.march is None


def test_the_rp2350_watchdog_is_not_where_the_rp2040s_is():
    # The bug the table fixes: the RP2040's clear alias lands in the RP2350's USB PLL block.
    rp2350 = rp2_chips.identify("Raspberry Pi Pico2 with RP2350")
    assert RP2040_WATCHDOG + CLR - RP2350_PLL_USB < 0x4000          # inside PLL_USB's 16 KB block
    assert rp2350.watchdog_ctrl_clear() == 0x400DB000


@pytest.mark.parametrize("key,gpio", [("pin_led", 23), ("pin_estop", 24), ("pin_beam", 29),
                                      ("pin_switch", 25)])
def test_a_pin_map_on_gpios_no_pico_brings_out_is_refused(key, gpio):
    # GP23-25 and GP29 are the board's own on every Pico (the radio's on a W board): not on the
    # header. GP25 stays the LED's.
    with pytest.raises(settings.SettingsError, match="GP%d is not on the Pico's header" % gpio):
        settings.Settings(board={key: gpio})
    assert settings.Settings(board={"pin_led": 25}).pins().led == 25


@NEEDS_MICROPYTHON
@pytest.mark.parametrize("machine", sorted(BOARDS))
def test_the_hal_uses_the_chips_watchdog_led_and_adc(machine, tmp_path):
    d = stand_in_dir(tmp_path)
    proc = host_helpers.run("hal_chips.py", machine, text=True, timeout=60, path_first=[d])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    chip, wireless, base, _, _ = BOARDS[machine]
    assert got["chip"] == chip
    # the watchdog left running by a previous run is stopped at setup, and again at wdt_stop
    assert got["setup_writes"] == [[base + CLR, ENABLE]]
    assert got["stop_writes"] == [[base + CLR, ENABLE]]
    assert got["outputs"] == (["LED"] if wireless else [25])
    assert sorted(got["inputs"]) == [13, 14, 15]
    assert got["adcs"] == [26, 27, 28]


@NEEDS_MICROPYTHON
def test_the_hal_on_an_unknown_chip_writes_no_register(tmp_path):
    d = stand_in_dir(tmp_path)
    proc = host_helpers.run("hal_chips.py", "Some Board with RP2999", text=True, timeout=60, path_first=[d])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["setup_writes"] == [] and got["stop_writes"] == [] and got["chip"] is None
    assert got["outputs"] == [25]
