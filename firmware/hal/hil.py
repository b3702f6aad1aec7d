# Hardware-in-the-loop pins: the read/PWM half of the board HAL, fed by HIL_SENSORS frames from the
# host's plant instead of the ADC and GPIOs (docs/protocol.md). The app points its drivers' `hal`
# here while HIL is on, so the same Pot/Current/Servo code runs; clock, watchdog, LED and console
# stay on the real HAL. Servo pulses are only recorded (the real PWM keeps holding what it had
# when HIL began) and go back to the host in a HIL_ACT frame.
from ...shared_fsm import link


class HilPins:
    def __init__(self, pins, mode, pulses):
        self.mode = mode
        self.adc = [0, 0, 0]
        self.slot = [0, 0, 0]                 # ADC channel -> frame slot (pot, current, rail)
        self.slot[pins.adc_pot] = 0
        self.slot[pins.adc_current] = 1
        self.slot[pins.adc_rail] = 2
        self.bit = {pins.estop: link.HIL_PIN_ESTOP, pins.switch: link.HIL_PIN_SWITCH,
                    pins.beam: link.HIL_PIN_BEAM}
        self.levels = link.HIL_PIN_ESTOP    # until the first frame: e-stop open (STOP), safe
        self.pulses = list(pulses)
        self.sensor_id = 0     # the frame the next tick steps on (0 = none yet)
        self.t_ms = 0
        self.fresh = 0         # a frame arrived that no tick has used yet
        self.got = 0           # frames received
        self.ticks = 0         # HIL ticks stepped

    def take(self, args):
        # One HIL_SENSORS frame (fields after its id were validated by the link).
        self.t_ms = args[0]
        a = self.adc
        a[0] = args[1]
        a[1] = args[2]
        a[2] = args[3]
        self.levels = args[4]
        self.fresh = 1
        self.got += 1

    # ---- what the drivers call: the PINS level of hal/contract.py ----
    def read_u16(self, adc):
        return self.adc[self.slot[adc]]

    def read_pin(self, gpio):
        return 1 if self.levels & self.bit[gpio] else 0

    def pwm_start(self, pulses_us):
        for i in range(5):
            self.pulses[i] = pulses_us[i]

    def set_pulse_us(self, index, us):
        self.pulses[index] = us


def wait_input(ms):
    # Idle up to `ms` until a console byte is waiting (select.poll on stdin: the RP2040 sleeps,
    # the unix port does not spin). Without select it returns at once.
    global _poll
    if _poll is None:
        try:
            import select
            import sys
            _poll = select.poll()
            _poll.register(sys.stdin, select.POLLIN)
        except Exception:
            _poll = False
    if _poll:
        for _ in _poll.ipoll(ms):
            return


_poll = None
