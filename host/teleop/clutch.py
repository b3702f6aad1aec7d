# Clutch, re-zero and scale. While the clutch is held the arm's target moves by the hand's
# displacement since the clutch was pressed, times the scale; pressing it (again) takes the hand's
# pose at that moment and the arm's current commanded pose as the new zero, so the operator can
# start from any stance and re-grip without the arm moving. Releasing it holds the target. The
# fine button divides the scale (reference design: by 5); switching scale re-zeroes too, so
# neither button makes the target jump. Tool pitch follows the hand's pitch change 1:1.
import numpy as np


class Clutch:
    def __init__(self, scale=0.15, fine_divisor=5.0, follow_pitch=True):
        if not scale > 0 or not fine_divisor >= 1:
            raise ValueError("scale must be > 0 and fine_divisor >= 1 (got %r, %r)" % (scale, fine_divisor))
        self.scale = float(scale)
        self.fine_divisor = float(fine_divisor)
        self.follow_pitch = bool(follow_pitch)
        self.engaged = False
        self.scale_now = self.scale
        self.hand_ref_m = None
        self.hand_ref_pitch = 0.0
        self.arm_ref_mm = None
        self.arm_ref_pitch = 0.0
        self.target_mm = None        # last output (held while the clutch is released)
        self.target_pitch = 0.0
        self.rezeros = 0

    def hold(self, pos_mm, pitch_deg):
        # Set the held target (start-up, or after the arm was moved another way, e.g. joint jog).
        self.target_mm = np.asarray(pos_mm, dtype=float).copy()
        self.target_pitch = float(pitch_deg)
        if self.engaged:
            self.arm_ref_mm = self.target_mm.copy()
            self.arm_ref_pitch = self.target_pitch
            self.hand_ref_m = None     # re-zero on the next hand pose

    def _rezero(self, hand_m, hand_pitch, arm_mm, arm_pitch):
        self.hand_ref_m = np.asarray(hand_m, dtype=float).copy()
        self.hand_ref_pitch = float(hand_pitch)
        self.arm_ref_mm = np.asarray(arm_mm, dtype=float).copy()
        self.arm_ref_pitch = float(arm_pitch)
        self.rezeros += 1

    def update(self, hand_m, hand_pitch, clutch, fine, commanded_mm, commanded_pitch, reanchor=False):
        # hand_m: hand position (Z-up, m) or None when this sample was dropped; commanded: the
        # arm's last commanded pose (mm, deg). Returns the target (mm, deg).
        scale = self.scale / self.fine_divisor if fine else self.scale
        if not clutch:
            self.engaged = False
        elif hand_m is not None:
            if not self.engaged:
                self.engaged = True
                self.scale_now = scale
                self._rezero(hand_m, hand_pitch, commanded_mm, commanded_pitch)
            elif reanchor or scale != self.scale_now or self.hand_ref_m is None:
                self.scale_now = scale
                self._rezero(hand_m, hand_pitch, self.target_mm, self.target_pitch)
            d_mm = (np.asarray(hand_m, dtype=float) - self.hand_ref_m) * 1000.0 * self.scale_now
            self.target_mm = self.arm_ref_mm + d_mm
            if self.follow_pitch:
                self.target_pitch = self.arm_ref_pitch + (hand_pitch - self.hand_ref_pitch)
        return self.target_mm.copy(), self.target_pitch
