# A 3Dconnexion SpaceMouse, read with `pyspacemouse` over HID (optional extra: pip install
# surepick[spacemouse]; Linux also needs libhidapi and read access to /dev/hidraw*). The knob is
# a rate device: its deflection (-1..1 per axis) moves a virtual hand at up to speed_mm_s, so the
# source speaks arm millimetres (scale 1). Axes in pyspacemouse's default convention (x right,
# y away from the user, z up) with the user standing behind the arm; pitch from the knob's
# pitch. Left button: toggle the jaw; right button held: fine; a third button (where there is one):
# teach mark "next".
import time

import numpy as np

from surepick.host.teleop import coord_frames
from surepick.host.teleop.sample import Buttons, Sample
from surepick.host.teleop.sources.base import MissingExtra, PoseSource
from surepick.host.teleop.sources.pacing import Pacer

EXTRA = "spacemouse"
DEADZONE = 0.05


def _import_pyspacemouse():
    try:
        import pyspacemouse
    except ImportError:
        raise MissingExtra("the SpaceMouse source", EXTRA, "the pyspacemouse package is not installed") from None
    except (OSError, AttributeError) as e:     # its HID library (hidapi) missing
        raise MissingExtra("the SpaceMouse source", EXTRA, "HID library: %s" % e) from None
    return pyspacemouse


def _dead(v):
    return 0.0 if abs(v) < DEADZONE else v


class SpaceMouseSource(PoseSource):
    name = "spacemouse"
    scale_hint = 1.0
    realtime = True

    def __init__(self, rate_hz=100.0, heading_deg=-90.0, speed_mm_s=100.0, pitch_deg_s=60.0, **_):
        psm = _import_pyspacemouse()
        self.rate_hz = float(rate_hz)
        self.heading_deg = float(heading_deg)
        self.speed = float(speed_mm_s)
        self.pitch_rate = float(pitch_deg_s)
        try:
            self.device = psm.open()
        except Exception as e:                  # 2.x raises when nothing is connected
            raise MissingExtra("a SpaceMouse", EXTRA, "none found: %s" % e) from None
        if not self.device:                     # 1.x returns None instead
            raise MissingExtra("a SpaceMouse", EXTRA, "none found")
        self.pos_mm = np.zeros(3)
        self.pitch_deg = 0.0
        self.grip = 0.0
        self._last_left = 0
        self._last_third = 0
        self.mark = None
        self._closed = False

    def step(self, state, dt):
        # Integrate one reading (x, y, z, pitch in -1..1; buttons) over dt seconds.
        self.pos_mm += self.speed * dt * np.array([_dead(state.y), -_dead(state.x), _dead(state.z)])
        self.pitch_deg += self.pitch_rate * dt * _dead(state.pitch)
        buttons = list(getattr(state, "buttons", None) or getattr(state, "button", None) or [])
        left = buttons[0] if buttons else 0
        if left and not self._last_left:
            self.grip = 0.0 if self.grip else 1.0
        self._last_left = left
        # a third button, where the model has one: teach mark "next" on the press
        third = buttons[2] if len(buttons) > 2 else 0
        self.mark = "next" if third and not self._last_third else None
        self._last_third = third
        return len(buttons) > 1 and bool(buttons[1])

    def __iter__(self):
        pace = Pacer(self.rate_hz)
        last = pace.start
        while not self._closed:
            state = self.device.read()
            now = time.monotonic()
            fine = self.step(state, now - last)
            last = now
            r, p = coord_frames.arm_to_openvr(coord_frames.controller_rotation_arm(self.pitch_deg), self.pos_mm / 1000.0,
                                        self.heading_deg)
            yield Sample(now - pace.start, np.hstack([r, p.reshape(3, 1)]), Buttons(True, fine, self.grip), mark=self.mark)
            pace.wait()

    def close(self):
        if not getattr(self, "_closed", True):
            self._closed = True
            try:
                self.device.close()
            except Exception:
                pass
