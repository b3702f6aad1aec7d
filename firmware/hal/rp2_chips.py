# The Raspberry Pi boards the rp2 HAL runs on and what differs between them: which chip a board
# carries, where that chip's watchdog sits, which native code its MicroPython loads, where its ADC
# inputs are, and whether the LED and GP23-25/GP29 belong to a radio chip. Read on the board by
# hal/rp2040.py and on the host by deploy and doctor (one table for both).
#
# A board names itself in MicroPython's machine string, "<board> with <MCU>"
# (sys.implementation._machine, os.uname().machine): the MCU part comes from ports/rp2/
# mpconfigport.h (MICROPY_HW_MCU_NAME "RP2040", "RP2350", "RP2350-RISCV"), the board part from
# each board's mpconfigboard.h (MICROPY_HW_BOARD_NAME). Addresses: pico-sdk
# src/rp2040/hardware_regs/include/hardware/regs/addressmap.h and src/rp2350/.../addressmap.h
# (WATCHDOG_BASE), watchdog.h (CTRL at offset 0, ENABLE = bit 30 on both chips). Register
# blocks have atomic aliases: +0x2000 sets bits, +0x3000 clears them (REG_ALIAS_SET/CLR_BITS).
from ...shared_fsm.compat import const

RP2040 = "RP2040"
RP2350 = "RP2350"
RP2350_RISCV = "RP2350-RISCV"

ALIAS_SET = const(0x2000)
ALIAS_CLR = const(0x3000)
WATCHDOG_CTRL_ENABLE = const(0x40000000)

# chip -> (WATCHDOG_BASE, the -march mpy-cross compiles native code for, GPIO of ADC channel 0).
# Every Pico carries the QFN-60 package (RP2350A on the Pico 2): ADC0-3 on GP26-29 on both chips.
CHIPS = {
    RP2040: (0x40058000, "armv6m", 26),
    RP2350: (0x400D8000, "armv7emsp", 26),
    RP2350_RISCV: (0x400D8000, "rv32imc", 26),
}

# MICROPY_HW_BOARD_NAME -> (our name for the board, 1 if it has the CYW43 radio). On the radio
# boards the LED is the radio's GPIO 0 (machine.Pin("LED")) and GP23 (WL_REG_ON), GP24 (WL_DATA),
# GP25 (WL_CS) and GP29 (WL_CLOCK) are the radio's bus (pico-sdk src/boards/include/boards/
# pico_w.h, pico2_w.h); on the others they are the SMPS mode, VBUS sense, LED and VSYS sense
# (pico.h, pico2.h). None of them is on the header of any Pico.
BOARDS = {
    "Raspberry Pi Pico": ("pico", 0),
    "Raspberry Pi Pico W": ("pico_w", 1),
    "Raspberry Pi Pico2": ("pico2", 0),
    "Raspberry Pi Pico 2 W": ("pico2_w", 1),
}
RADIO_GPIOS = (23, 24, 25, 29)
BOARD_LED_GPIO = const(25)        # pin_led 25: the board's own LED, wherever it sits


class Board:
    # What a machine string says about the board. chip is None for a board that is not an rp2
    # (the virtual board's unix port, a board this table does not know).
    def __init__(self, machine):
        self.machine = machine
        head, sep, mcu = machine.rpartition(" with ")
        self.chip = mcu if sep and mcu in CHIPS else None
        self.name = head if sep else machine
        known = BOARDS.get(self.name)
        self.key = known[0] if known else None
        self.wireless = known[1] if known else 0
        c = CHIPS.get(self.chip)
        self.watchdog_base = c[0] if c else 0
        self.march = c[1] if c else None
        self.adc_gpio0 = c[2] if c else 26

    def watchdog_ctrl_clear(self):
        # -> the address that clears bits of WATCHDOG CTRL, or 0 when the chip is unknown (then
        # nothing is written: a guessed address lands in some other block, as 0x4005B000 does in
        # the RP2350's USB PLL).
        return self.watchdog_base + ALIAS_CLR if self.watchdog_base else 0

    def led_is_radio(self, gpio):
        return self.wireless and gpio == BOARD_LED_GPIO


def identify(machine):
    return Board(machine or "")


def this_board():
    # The board this code runs on (MicroPython: sys.implementation._machine).
    import sys
    return Board(getattr(sys.implementation, "_machine", ""))


# Our board names as `surepick board --model` takes them -> (MICROPY_HW_BOARD_NAME, chip): what a
# board of that model reports as its machine string.
MODELS = {
    "pico": ("Raspberry Pi Pico", RP2040),
    "pico_w": ("Raspberry Pi Pico W", RP2040),
    "pico2": ("Raspberry Pi Pico2", RP2350),
    "pico2_w": ("Raspberry Pi Pico 2 W", RP2350),
    "pico2-riscv": ("Raspberry Pi Pico2", RP2350_RISCV),
    "pico2_w-riscv": ("Raspberry Pi Pico 2 W", RP2350_RISCV),
}


def machine_string(model):
    name, chip = MODELS[model]
    return name + " with " + chip
