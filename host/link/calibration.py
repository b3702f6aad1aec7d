# The board's calibration routines over the link (CALIBRATE, docs/protocol.md), shared by
# `surepick calibrate` and bring-up's current zero: the request, and a refusal in words that
# name the way out (host/link/answers.py).
from surepick.host.link.answers import refusal
from surepick.shared_fsm import link

TARGETS = {"pot": link.CAL_POT, "current": link.CAL_CURRENT}


class CalibrationRefused(Exception):
    """The board refused or did not finish the calibration; str() says why and the way out."""


def calibrate(c, target, timeout_s):
    """Run the board's `target` routine ("pot" or "current") over client c -> the answer's
    payload: (setting name, value saved), or shorter if the board sent no value."""
    r = c.request(link.T_CALIBRATE, (TARGETS[target],), timeout_s)
    if not r.ok:
        raise CalibrationRefused(refusal(r.code, r.payload, c.port))
    return r.payload
