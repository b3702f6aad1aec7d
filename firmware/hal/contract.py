# The HAL contract: every function the firmware calls on its `hal` and every constant a HAL
# shares, named once. Two levels:
#   PINS   what the drivers call (firmware/sensors.py, firmware/servo.py): ADC counts, pin
#          levels, servo pulses. hil.HilPins is this.
#   BOARD  the whole board HAL: PINS plus set-up, clock, watchdog, identity, console and the
#          RESET_* constants. rp2040 (a real Pico), virtual (the virtual board), world_pins (the
#          in-process simulator) and scripted (the tests' and benchmarks' stand-in) are this, as
#          module functions or as an object's methods.
# tests/firmware/test_hal_contract.py checks each implementation against it.
# Data only, because the board imports it for the RESET_* numbers: the tables are strings of
# signatures (importing the compiled module takes 1.2 KB of heap on the 64-bit unix port; the
# same tables as tuples of tuples took 4.6 KB). tests/mpy/hal_check.py reads them.
from ...shared_fsm.compat import const

PINS = const(1)
BOARD = const(2)

# What reset_cause() returns and HELLO carries: the same numbers on every board (the ports'
# machine.*_RESET values differ, so each HAL maps its own to these).
RESET_UNKNOWN = const(0)
RESET_POWER_ON = const(1)    # includes a brownout: the RP2040 has no separate flag for it
RESET_WATCHDOG = const(2)
RESET_SOFT = const(3)
RESET_HARD = const(4)

# Functions as "name(parameters)", each with what it means. Callers pass every argument
# positionally, so an implementation may name its parameters as it likes.
PINS_FUNCTIONS = (
    "read_u16(adc) "                  # ADC channel 0..2 -> 0..65535 counts
    "read_pin(gpio) "                 # input level 0/1 (pull-ups: 1 = open)
    "pwm_start(pulses_us) "           # start the 5 servo PWMs (50 Hz) at these pulses; 0 = off
    "set_pulse_us(index, us) "        # servo 0..4 to this pulse; 0 = PWM off (limp)
)
BOARD_FUNCTIONS = (
    "setup(pins) "                    # wire the pins (a settings.Pins); inputs readable after it;
                                      # pins.servo (the arm description's, -1 = none) is read at pwm_start
    "led(on) "                        # status LED on (truthy) or off
    "ticks_ms() "                     # the loop's clock in ms, wraps at 2**30
    "ticks_us() "                     # the same clock in us, wraps at 2**30
    "ticks_add(t, delta) "            # t + delta on the 2**30 wrap
    "ticks_diff(a, b) "               # a - b on the 2**30 wrap, signed
    "cpu_us() "                       # free-running us counter for measuring work
    "wait_until_us(deadline_us) "     # idle until ticks_us() reaches it; at once if late
    "sleep_ms(ms) "                   # blocking wait, boot only
    "wdt_start(timeout_ms) "          # start the watchdog (0 = none)
    "wdt_feed() "                     # feed it
    "wdt_stop() "                     # the loop stopped for good (Ctrl-C): no watchdog from now on
    "guard_estop() "                  # after Ctrl-C: an e-stop press freezes every servo at its pulse
    "reset_cause() "                  # why this boot happened: a RESET_* above
    "unique_id() "                    # the board's id as a hex string
    "console_read_byte() "            # -1, or the next console byte 0..255; never blocks
    "console_write(data) "            # bytes to the console (frames, REPL text)
)
BOARD_CONSTANTS = "RESET_UNKNOWN RESET_POWER_ON RESET_WATCHDOG RESET_SOFT RESET_HARD"

