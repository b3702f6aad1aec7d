# The board's input path end to end under `micropython`: the Pico HAL's console_read_byte
# (firmware/hal/rp2040.py: select.poll on stdin, a kept one-byte buffer; a stand-in `machine`
# from the pytest side lets it set up on the unix port) into cmdparse.LineReader, at most 16
# bytes per loop pass, never blocking. Prints one line per parsed request
# ("REQ type req_id args...") or error ("ERR code req_id"), and "IDLE n" (loop passes that
# found nothing to read: proof the loop kept running). A PING with req_id 65535 ends it.
import time

from surepick.shared_fsm import link
from surepick.firmware import cmdparse
from surepick.firmware.hal import rp2040 as hal
from reference_pins import reference_pins


hal.setup(reference_pins())
reader = cmdparse.LineReader()
idle = 0
worst_us = 0
start = time.ticks_ms()
while time.ticks_diff(time.ticks_ms(), start) < 10000:
    t0 = time.ticks_us()
    r = reader.poll(hal.console_read_byte, 16)
    if r == cmdparse.LINE_READY:
        err, ftype, rid, args = cmdparse.parse_line(reader.line())
        if err == link.OK:
            print("REQ %s %d %s" % (link.SCHEMA[ftype][0], rid, " ".join([str(a) for a in args])))
            if ftype == link.T_PING and rid == 65535:
                break
        elif cmdparse.needs_reply(err):
            print("ERR %s %d" % (link.ERROR_NAMES[err], rid))
    elif r == cmdparse.LINE_OVERLONG:
        print("ERR TOO_LONG 0")
    else:
        idle += 1
    worst_us = max(worst_us, time.ticks_diff(time.ticks_us(), t0))
    time.sleep_ms(1)
print("IDLE %d" % idle)
print("LINES %d OVERLONG %d RESYNCS %d" % (reader.lines, reader.overlong, reader.resyncs))
