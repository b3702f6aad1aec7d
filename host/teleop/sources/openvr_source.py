# An OpenVR controller (SteamVR; any headset's controllers: Vive, Index, Quest or Pico through
# streaming), read with the `openvr` package (optional extra: pip install surepick[openvr]).
# IVRSystem.getDeviceToAbsoluteTrackingPose() gives each device's pose as a 3x4 row-major matrix
# in the standing tracking universe (Y up, metres); it is polled at the device rate rather than
# waiting on the compositor, so a dropped video frame does not stall control (reference design).
#   grip button: clutch   touchpad / thumbstick press: fine   trigger (axis 1): jaw
#   menu button: teach mark "next" (surepick teach), on the press
import time

import numpy as np

from surepick.host.teleop.sample import Buttons, Sample
from surepick.host.teleop.sources.base import MissingExtra, PoseSource
from surepick.host.teleop.sources.pacing import Pacer

EXTRA = "openvr"


def _import_openvr():
    try:
        import openvr
    except ImportError:
        raise MissingExtra("the OpenVR source", EXTRA, "the openvr package is not installed") from None
    return openvr


class OpenVRSource(PoseSource):
    name = "openvr"
    realtime = True

    def __init__(self, hand="right", rate_hz=90.0, **_):
        self.openvr = ovr = _import_openvr()
        self.rate_hz = float(rate_hz)
        try:
            self.system = ovr.init(ovr.VRApplication_Background)
        except Exception as e:      # openvr.OpenVRError: no runtime, SteamVR not running, no HMD
            why = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise MissingExtra("an OpenVR controller", EXTRA, "OpenVR did not start: %s; is SteamVR running?"
                               % why) from None
        self.role = ovr.TrackedControllerRole_RightHand if hand == "right" else ovr.TrackedControllerRole_LeftHand
        self.index = self.system.getTrackedDeviceIndexForControllerRole(self.role)
        if self.index == ovr.k_unTrackedDeviceIndexInvalid:
            self.close()
            raise MissingExtra("an OpenVR controller", EXTRA, "no %s-hand controller is connected" % hand)
        self._grip_mask = 1 << ovr.k_EButton_Grip
        self._fine_mask = 1 << ovr.k_EButton_SteamVR_Touchpad
        self._mark_mask = 1 << ovr.k_EButton_ApplicationMenu
        self._mark_down = False
        self._closed = False

    def read(self, t):
        ovr = self.openvr
        poses = self.system.getDeviceToAbsoluteTrackingPose(ovr.TrackingUniverseStanding, 0,
                                                            ovr.k_unMaxTrackedDeviceCount)
        p = poses[self.index]
        pose = None
        if p.bPoseIsValid:
            m = p.mDeviceToAbsoluteTracking
            pose = np.array([[m[i][j] for j in range(4)] for i in range(3)])
        ok, state = self.system.getControllerState(self.index)
        buttons = Buttons()
        mark = None
        if ok:
            pressed = state.ulButtonPressed
            trigger = float(state.rAxis[1].x)
            buttons = Buttons(bool(pressed & self._grip_mask), bool(pressed & self._fine_mask),
                              min(max(trigger, 0.0), 1.0))
            down = bool(pressed & self._mark_mask)
            mark = "next" if down and not self._mark_down else None
            self._mark_down = down
        return Sample(t, pose, buttons, mark=mark)

    def __iter__(self):
        pace = Pacer(self.rate_hz)
        while not self._closed:
            yield self.read(time.monotonic() - pace.start)
            pace.wait()

    def close(self):
        if not getattr(self, "_closed", True):
            self._closed = True
            try:
                self.openvr.shutdown()
            except Exception:
                pass
