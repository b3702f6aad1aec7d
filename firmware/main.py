# Runs at boot (after boot.py), from the board's root: the firmware's main loop on this board's
# HAL (hal.for_this_port() picks it by platform). Ctrl-C stops it with the servos holding their last
# pulses; mpremote then has the REPL. The firmware itself lives in /lib/surepick.
from surepick.firmware import preload
preload.load()      # module by module, collected between: the heap stays in one piece (preload.py)
from surepick.firmware import app
from surepick.firmware.hal import for_this_port

app.main(for_this_port())
