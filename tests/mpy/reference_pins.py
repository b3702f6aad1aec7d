# The reference build's pin map as the firmware makes it (firmware/settings.py Pins from the board
# defaults; the servos' GPIOs from the reference arm's description), for runner scripts here that
# set a HAL up by hand.
from surepick.firmware import settings
from surepick.shared_fsm import kinematics


def reference_pins():
    pins = settings.Pins(settings.board_defaults())
    pins.servo = kinematics.REFERENCE.servo_pins()
    return pins
