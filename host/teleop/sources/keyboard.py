# Keyboard jog in the terminal: stdin in cbreak mode (termios/tty: one key at a time, no echo;
# Ctrl-C still interrupts), a sample every 1/rate s with the jogged pose, so the pipeline treats
# it like any other source (clutch always held, scale 1: the steps are in arm millimetres).
#
#   Cartesian mode (default)        Joint mode
#   w / s   forward / back (x)      q / a   base yaw + / -
#   a / d   left / right (y)        w / s   shoulder + / -
#   r / f   up / down (z)           e / d   elbow + / -
#   t / g   tool pitch up / down    r / f   wrist + / -
#   m  toggle mode   [ / ]  smaller / larger step   space  toggle the jaw   x  quit
#   c / v  close / open the jaw by the step (mm): a light grip, e.g. to teach a part's width
#   teach marks (surepick teach): 1 pick approach, 2 pick, 3 part width (jaw gripping),
#   4 place approach, 5 place, n the next one still missing
#
# The keys move the tool relative to where the session started (the sim: its home pose, jaw
# centre at x=100 y=0 z=80 mm, pitch -90 deg; a board: where its arm stands), the jaw 40 mm open
# until space, c or v close it.
# After every key the session prints where the tool is going (JogEcho below): x, y, z, pitch
# and jaw, with the four joint angles in joint mode, so nobody jogs blind without a viewer.
import os
import select
import sys
import time

import numpy as np

from surepick.host.teleop import coord_frames
from surepick.host.teleop.sample import Buttons, Sample
from surepick.host.teleop.sources.base import PoseSource, SourceError

JAW_OPEN_MM = 40.0        # grip 0 (pipeline.JAW_OPEN_UM): c / v move the jaw in mm of this
STEPS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)      # mm in Cartesian mode, degrees in joint mode
CART_KEYS = {"w": (0, 1), "s": (0, -1), "a": (1, 1), "d": (1, -1), "r": (2, 1), "f": (2, -1),
             "t": (3, 1), "g": (3, -1)}
JOINT_KEYS = {"q": (0, 1), "a": (0, -1), "w": (1, 1), "s": (1, -1), "e": (2, 1), "d": (2, -1),
              "r": (3, 1), "f": (3, -1)}
MARK_KEYS = {"1": "pick_approach", "2": "pick", "3": "width", "4": "place_approach", "5": "place", "n": "next"}
HELP = ("keyboard jog: w/s a/d r/f move x/y/z, t/g pitch; m joint mode (q/a w/s e/d r/f); "
        "[ ] step; space jaw, c/v close/open it by the step; x quit; teach marks 1 pick-approach 2 pick 3 width 4 place-approach 5 place n next")


class KeyboardSource(PoseSource):
    name = "keyboard"
    scale_hint = 1.0
    realtime = True

    def __init__(self, rate_hz=50.0, heading_deg=-90.0, fd=None, out=None, step_index=3):
        self.rate_hz = float(rate_hz)
        self.heading_deg = float(heading_deg)
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.out = out if out is not None else sys.stderr
        if not os.isatty(self.fd):
            raise SourceError("the keyboard source needs a terminal on stdin (it is not a tty)")
        import termios
        import tty
        self._termios = termios
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        self.pos_mm = np.zeros(3)
        self.pitch_deg = 0.0
        self.mode = "cartesian"
        self.step_index = int(step_index)
        self.grip = 0.0
        self._jog = np.zeros(4)
        self.keys = 0             # keys that moved something: JogEcho prints the pose after each
        self._mark = None
        self._quit = False
        self._closed = False
        self._say(HELP)

    def _say(self, text):
        self.out.write("\r" + text + "\n")
        self.out.flush()

    def _status(self):
        step = STEPS[self.step_index]
        unit = "mm" if self.mode == "cartesian" else "deg"
        self._say("[%s] step %g %s, jaw %s, offset x=%.1f y=%.1f z=%.1f mm pitch %+.1f deg"
                  % (self.mode, step, unit, "%.1f mm" % (JAW_OPEN_MM * (1.0 - self.grip)), self.pos_mm[0],
                     self.pos_mm[1], self.pos_mm[2], self.pitch_deg))

    def key(self, ch):
        # One key press -> state change (also used by tests directly).
        step = STEPS[self.step_index]
        if ch in CART_KEYS or ch in JOINT_KEYS or ch in (" ", "c", "v", "m"):
            self.keys += 1
        if ch in ("x", "\x03", "\x04"):
            self._quit = True
        elif ch == "m":
            self.mode = "joint" if self.mode == "cartesian" else "cartesian"
            self._status()
        elif ch == "[":
            self.step_index = max(0, self.step_index - 1)
            self._status()
        elif ch == "]":
            self.step_index = min(len(STEPS) - 1, self.step_index + 1)
            self._status()
        elif ch == " ":
            self.grip = 0.0 if self.grip else 1.0
            self._status()
        elif ch in ("c", "v"):
            d = STEPS[self.step_index] / JAW_OPEN_MM
            self.grip = min(1.0, max(0.0, self.grip + (d if ch == "c" else -d)))
            self._status()
        elif ch in MARK_KEYS:
            self._mark = MARK_KEYS[ch]
        elif self.mode == "cartesian" and ch in CART_KEYS:
            axis, sign = CART_KEYS[ch]
            if axis < 3:
                self.pos_mm[axis] += sign * step
            else:
                self.pitch_deg += sign * step
        elif self.mode == "joint" and ch in JOINT_KEYS:
            j, sign = JOINT_KEYS[ch]
            self._jog[j] += sign * step

    def _sample(self, t):
        r_arm = coord_frames.controller_rotation_arm(self.pitch_deg)
        r, p = coord_frames.arm_to_openvr(r_arm, self.pos_mm / 1000.0, self.heading_deg)
        pose = np.hstack([r, p.reshape(3, 1)])
        jog = None
        if np.any(self._jog):
            jog, self._jog = self._jog.copy(), np.zeros(4)
        mark, self._mark = self._mark, None
        return Sample(t, pose, Buttons(True, False, self.grip), joint_jog_deg=jog, quit=self._quit, mark=mark,
                      keys=self.keys)

    def __iter__(self):
        start = time.monotonic()
        period = 1.0 / self.rate_hz
        nxt = start
        # The zero pose first, before any key is read: the clutch zeroes on the first sample, and
        # keys typed early must move the arm, not the zero.
        yield self._sample(0.0)
        while not self._closed:
            nxt += period
            while True:
                wait = nxt - time.monotonic()
                if wait <= 0:
                    break
                ready, _, _ = select.select([self.fd], [], [], wait)
                if ready:
                    data = os.read(self.fd, 64)
                    if not data:
                        self._quit = True
                        break
                    for ch in data.decode("latin-1"):
                        self.key(ch)
            yield self._sample(time.monotonic() - start)
            if self._quit:
                return

    def close(self):
        if not self._closed:
            self._closed = True
            try:
                self._termios.tcsetattr(self.fd, self._termios.TCSADRAIN, self._saved)
            except Exception:
                pass


class JogEcho:
    """Prints where the tool is once the pipeline has taken a key: the commanded tool pose once it
    moved and came to rest (the low-pass converging: under 0.005 mm a tick for three ticks), or
    half a second after a key that moved nothing (a mode switch, a jog against a limit): x, y, z,
    pitch, jaw, and in joint mode the joint angles. Called every control tick: echo(tick_ms, ctrl).
    It counts a key once the control stage has used the sample carrying it (it is also a session
    observer: sample() below), not when the terminal gave it: a control loop catching up after a
    stall runs many ticks before the reader hands that sample over, and the echo must not print
    the pose from before the key meanwhile."""

    STILL_MM = 0.005
    STILL_TICKS = 3
    LATEST_MS = 500

    def __init__(self, source, out=None):
        self.source = source
        self.out = out if out is not None else source.out
        self.seen = 0
        self.used = 0                 # keys in the samples the control stage has taken
        self.since_ms = None          # tick of the first look after an unreported key
        self.before = None            # the commanded pose then
        self.last = None
        self.still = 0
        self.started = False

    @staticmethod
    def _pose(ctrl):
        return np.concatenate([np.asarray(ctrl.target_mm, dtype=float), [ctrl.target_pitch, ctrl.jaw_um / 1000.0],
                               np.asarray(ctrl.q_ik_deg, dtype=float)])

    def sample(self, sample, res, ctrl, session):
        # Observer hook: called after the control tick that used this sample.
        self.used = max(self.used, sample.keys)

    def __call__(self, tick_ms, ctrl):
        pose = self._pose(ctrl)
        last, self.last = self.last, pose
        if not self.started:
            self.started = True
            self.say("start", ctrl)
        keys = self.used
        if keys == self.seen:
            return
        if self.since_ms is None:
            # this tick used the key: the pose before it is the last tick's
            self.since_ms, self.before, self.still = tick_ms, (pose if last is None else last), 0
        step = float(np.max(np.abs(pose[:3] - last[:3]))) if last is not None else 0.0
        self.still = self.still + 1 if step < self.STILL_MM else 0
        moved = bool(np.any(np.abs(pose - self.before) > 1e-6))
        if self.still < self.STILL_TICKS or not moved and tick_ms - self.since_ms < self.LATEST_MS:
            return
        self.seen = keys
        self.since_ms = None
        self.say("tool", ctrl)

    def say(self, what, ctrl):
        x, y, z = (float(v) for v in ctrl.target_mm)
        text = "%s x=%.1f y=%.1f z=%.1f mm, pitch %+.1f deg, jaw %.1f mm" % (
            what, x, y, z, float(ctrl.target_pitch), ctrl.jaw_um / 1000.0)
        if self.source.mode == "joint":
            text += "; joints %s deg" % " ".join("%.1f" % v for v in ctrl.q_ik_deg)
        self.out.write("\r" + text + "\n")
        self.out.flush()
