# Smoothing at the control rate: first-order low-pass on position (reference design: alpha
# 0.2-0.4; smaller lags, larger passes the hand's tremor) and nlerp on orientation.
import numpy as np

from surepick.host.teleop.quat import nlerp_wxyz, normalize_wxyz


class LowPass:
    def __init__(self, alpha=0.3):
        if not 0.0 < alpha <= 1.0:
            raise ValueError("alpha must be in (0, 1], got %r" % (alpha,))
        self.alpha = float(alpha)
        self.y = None

    def reset(self, x):
        self.y = np.asarray(x, dtype=float).copy()

    def update(self, x):
        x = np.asarray(x, dtype=float)
        if self.y is None:
            self.y = x.copy()
        else:
            self.y = self.y + self.alpha * (x - self.y)
        return self.y.copy()


class OrientationFilter:
    def __init__(self, alpha=0.3):
        if not 0.0 < alpha <= 1.0:
            raise ValueError("alpha must be in (0, 1], got %r" % (alpha,))
        self.alpha = float(alpha)
        self.q = None

    def reset(self, q_wxyz):
        self.q = normalize_wxyz(q_wxyz)

    def update(self, q_wxyz):
        if self.q is None:
            self.q = normalize_wxyz(q_wxyz)
        else:
            self.q = nlerp_wxyz(self.q, q_wxyz, self.alpha)
        return self.q.copy()
