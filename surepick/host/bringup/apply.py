"""Giving a board what bring-up found. The firmware takes each arm servo's zero, gear and direction
from /arm.json, and its pulse range, trim and the gripper's direction from its own settings
(servoN_min_us, servoN_max_us, servoN_trim_us, servoN_inverted: docs/arm-description.md,
"Not yet"); board_settings() says what those settings must be for the description to hold."""
from surepick.shared_fsm import link, servo_cal


BUSY_WAIT_S = 30.0


class ApplyError(Exception):
    pass


def board_settings(arm):
    """[(key, value)] of the board's servo settings that make it drive `arm` as described: the
    description's pulse range and trim; inverted only for the gripper (an arm servo's direction
    is the description's, which the firmware mirrors by itself)."""
    out = []
    for i in range(servo_cal.N_SERVOS):
        if arm.servo(i) is None:
            continue
        lo, hi, trim, inverted = arm.servo_cal(i)
        out += [("servo%d_min_us" % i, lo), ("servo%d_max_us" % i, hi), ("servo%d_trim_us" % i, trim),
                ("servo%d_inverted" % i, inverted if i == servo_cal.GRIPPER else 0)]
    return out


def config_set(client, key, value, timeout=10.0):
    # (the ranges bring-up writes are centred on 1500 us: min_us then max_us always keeps min < max)
    import time
    deadline = time.monotonic() + BUSY_WAIT_S
    from surepick.host.link.errors import RequestTimeout
    while True:
        try:
            r = client.request(link.T_CONFIG_SET, (key, int(value)), timeout)
        except RequestTimeout:
            if time.monotonic() > deadline:   # setting it again is harmless (a loaded host)
                raise
            continue
        if r.code != link.E_BUSY or time.monotonic() > deadline:
            break
        time.sleep(0.1)              # the board takes settings only with the arm at rest
    if not r.ok:
        raise ApplyError("%s=%d refused (%s %s)" % (key, value, r.code_name, " ".join(str(p) for p in r.payload)))
