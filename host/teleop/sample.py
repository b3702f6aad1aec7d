# One reading of a pose source: the shape every source yields and the pipeline takes.
import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Buttons:
    clutch: bool = False     # held: the arm follows the hand; pressing it re-zeroes (no jump)
    fine: bool = False       # held: the hand-to-arm scale is divided by the fine factor
    grip: float = 0.0        # trigger, 0 = jaw open .. 1 = jaw closed

    @classmethod
    def from_dict(cls, d, where="buttons"):
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise ValueError("%s must be an object with clutch, fine, grip" % where)
        unknown = set(d) - {"clutch", "fine", "grip"}
        if unknown:
            raise ValueError("%s: unknown key(s) %s (known: clutch, fine, grip)" % (where, ", ".join(sorted(unknown))))
        clutch, fine = d.get("clutch", False), d.get("fine", False)
        for name, v in (("clutch", clutch), ("fine", fine)):
            if not isinstance(v, bool):
                raise ValueError("%s.%s must be true or false, got %r" % (where, name, v))
        grip = d.get("grip", 0.0)
        if isinstance(grip, bool) or not isinstance(grip, (int, float)) or not math.isfinite(grip) \
                or not 0.0 <= grip <= 1.0:
            raise ValueError("%s.grip must be a number 0..1, got %r" % (where, grip))
        return cls(clutch, fine, float(grip))

    def to_dict(self):
        return {"clutch": self.clutch, "fine": self.fine, "grip": self.grip}


# Teach marks a sample may carry (surepick teach): the pose to record at this moment, the part
# width from the jaw, or "next" (the next one the teach sequence still lacks: one button for all).
MARKS = ("pick_approach", "pick", "width", "place_approach", "place", "next")


def check_mark(v, where="mark"):
    if v is None or v in MARKS:
        return v
    raise ValueError("%s must be one of %s, got %r" % (where, ", ".join(MARKS), v))


@dataclass
class Sample:
    t: float                                   # seconds, the source's clock
    pose: object = None                        # 3x4 ndarray in OpenVR's frame (Y up, m), or None: tracking lost
    buttons: Buttons = field(default_factory=Buttons)
    joint_jog_deg: object = None               # keyboard joint jog: 4 increments (deg), else None
    quit: bool = False                         # the operator asked to stop (keyboard)
    mark: object = None                        # a teach mark (MARKS) or None
    keys: int = 0                              # keyboard: keys pressed up to this sample (JogEcho)

    def pose_list(self):
        return None if self.pose is None else np.asarray(self.pose, dtype=float).reshape(12).tolist()
