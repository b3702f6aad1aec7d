# The firmware's real loop (App.tick) driven by a runner script with the stand-in HAL
# (firmware/hal/scripted.py): board time in 2 ms ticks, and a link request answered in them.
# The app and its HAL are arguments: each script makes its own.
from surepick.shared_fsm import link

TICK_MS = 2


def run(app, hal, ticks):
    for _ in range(ticks):
        app.tick(hal.ticks_ms())
        hal._advance(TICK_MS)


def ask(app, hal, ftype, rid, args=(), ticks=20):
    # Send one request and run `ticks` ticks. -> (the REPLY's fields for rid, the frames written
    # before it, the frames after it); without a reply (None, every frame written, []).
    mark = len(hal.frames())
    hal.send(link.request(ftype, rid, args))
    run(app, hal, ticks)
    new = hal.frames()[mark:]
    for i in range(len(new)):
        if new[i][0] == link.T_REPLY and new[i][1][0] == rid:
            return new[i][1], new[:i], new[i + 1:]
    return None, new, []
