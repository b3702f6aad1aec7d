# Status LED (GP25): what the arm is doing, readable from across the bench.
#   idle: 1 s heartbeat blip   busy (cycle or recovery): on   fault: 4 Hz blink   e-stop: 10 Hz
#   a production run stopped on its own (a fault policy, a part never ready): two blips a second

from ..shared_fsm.compat import const, micropython

IDLE = const(0)
BUSY = const(1)
FAULT = const(2)
ESTOP = const(3)
STOPPED = const(4)


class StatusLed:
    def __init__(self, hal):
        self.hal = hal
        self.on = -1

    @micropython.native
    def update(self, now_ms, mode):
        if mode == BUSY:
            on = 1
        elif mode == FAULT:
            on = 1 if (now_ms % 250) < 125 else 0
        elif mode == ESTOP:
            on = 1 if (now_ms % 100) < 50 else 0
        elif mode == STOPPED:
            on = 1 if (now_ms % 500) < 60 else 0
        else:
            on = 1 if (now_ms % 1000) < 50 else 0
        if on != self.on:
            self.on = on
            self.hal.led(on)
