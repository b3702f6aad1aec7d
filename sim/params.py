# The plant's parameter set: everything about the simulated hardware that a fit tool may perturb
# (servo strength, speed, deadband and proportional band; pad spring; sensor offsets and noise;
# the plant's own servo calibration). Round-trips through a plain JSON dict.
# Host-only code (never runs on the board), so dataclasses and floats are fine here.
import copy
import json
from dataclasses import asdict, dataclass, field, fields

from surepick.shared_fsm import kinematics, servo_cal

SERVO_NAMES = ("base", "shoulder", "elbow", "wrist", "gripper")


@dataclass
class ServoParams:
    kind: str
    stall_torque_nm_4v8: float      # datasheet stall torque at 4.8 V; scales with the rail
    speed_s_per_60deg_4v8: float    # datasheet no-load speed at 4.8 V
    deadband_us: float              # pulse error the servo ignores
    band_deg: float                 # proportional band: error at which torque saturates (4.8 V)
    armature_kgm2: float            # gear-train inertia seen at the output shaft (sets ringing)
    idle_ma: float
    stall_ma_5v: float              # stall current at 5 V; scales with the rail
    # Torque it takes to turn the output shaft of the UNPOWERED servo (gear friction, motor
    # cogging, times the gear ratio): below it the gear train holds the joint, above it the
    # joint back-drives (docs/arm-description.md, servo_models).
    backdrive_torque_nm: float = 0.0
    # The plant's own calibration (pulse -> servo angle); perturb it to model a mis-set trim.
    min_us: int = servo_cal.DEFAULT_CAL[0]
    max_us: int = servo_cal.DEFAULT_CAL[1]
    trim_us: int = servo_cal.DEFAULT_CAL[2]
    inverted: int = servo_cal.DEFAULT_CAL[3]
    travel_mdeg: int = servo_cal.DEFAULT_CAL[4]     # the servo's travel from min_us to max_us

    def cal(self):
        return (self.min_us, self.max_us, self.trim_us, self.inverted, self.travel_mdeg)


def servo_params(arm, slot):
    """The simulator's servo in slot 0..4 of an Arm: its servo model and its calibration as the
    description says (the plant's servo is, by default, exactly the one described)."""
    entry = arm.servo(slot)
    if entry is None:              # a slot the kind has no servo for: never driven
        entry = arm.servos[-1]
    model = dict(arm.servo_models[entry["model"]])
    kind = model.pop("part") or entry["model"]
    cal = arm.servo_cal(slot)
    return ServoParams(kind=kind, min_us=cal[0], max_us=cal[1], trim_us=cal[2], inverted=cal[3],
                       travel_mdeg=cal[4], **model)


def _reference():
    return kinematics.REFERENCE


def _default_servos():
    return [servo_params(_reference(), i) for i in range(len(SERVO_NAMES))]


def _from_section(kind, section):
    return lambda: kind(**_reference().sensors[section])


@dataclass
class PadParams:
    stiffness_n_per_m: float        # sprung pad
    damping_ns_per_m: float         # light: the pad rings on its spring
    travel_mm: float                # hard stop behind the pad
    preload_mm: float               # spring pre-compression against the front stop
    friction: float                 # rubber pad
    finger_friction: float          # bare finger plastic


@dataclass
class SwitchParams:
    trip_mm: float                  # pad travel that presses the microswitch
    release_mm: float               # differential travel (hysteresis)
    bounce_min_ms: int
    bounce_max_ms: int


@dataclass
class PotParams:
    closed_counts: float            # read_u16 counts at jaw 0 mm
    counts_per_mm: float
    offset_counts: float            # calibration error of the plant vs the firmware default
    noise_counts: float             # 1 sigma, read_u16 units


@dataclass
class CurrentParams:
    offset_counts: float
    counts_per_a: float
    noise_counts: float             # 1 sigma


@dataclass
class RailParams:
    nominal_mv: float
    source_mohm: float              # battery + wiring: big currents sag the rail
    divider: float
    reset_mv: float                 # below this the servos' electronics reset (go limp)
    servo_reset_ms: int             # how long a servo stays limp after the rail recovers
    brownout_mv: float              # rail level during a forced brownout
    noise_counts: float


@dataclass
class PlantParams:
    # Defaults: the reference arm's description (shared_fsm/arm_reference.py); for_arm() takes
    # another arm's.
    servos: list = field(default_factory=_default_servos)
    pad: PadParams = field(default_factory=_from_section(PadParams, "pad"))
    switch: SwitchParams = field(default_factory=_from_section(SwitchParams, "switch"))
    pot: PotParams = field(default_factory=_from_section(PotParams, "pot"))
    current: CurrentParams = field(default_factory=_from_section(CurrentParams, "current"))
    rail: RailParams = field(default_factory=_from_section(RailParams, "rail"))
    servo_frame_ms: int = 20            # 50 Hz PWM: a servo sees a new pulse once per frame
    limp_damping_fraction: float = 0.25  # viscous gear and bearing losses left when unpowered
    home_deg: tuple = field(default_factory=lambda: tuple(_reference().home_deg()))  # joint angles at start
    home_jaw_mm: float = field(default_factory=lambda: _reference().bench["home_jaw_mm"])

    @classmethod
    def for_arm(cls, arm):
        """The plant parameters an arm's description gives (servo models and calibrations,
        sensor models, the rest pose)."""
        return cls(servos=[servo_params(arm, i) for i in range(len(SERVO_NAMES))],
                   pad=PadParams(**arm.sensors["pad"]), switch=SwitchParams(**arm.sensors["switch"]),
                   pot=PotParams(**arm.sensors["pot"]), current=CurrentParams(**arm.sensors["current"]),
                   rail=RailParams(**arm.sensors["rail"]), home_deg=tuple(arm.home_deg()),
                   home_jaw_mm=arm.bench["home_jaw_mm"])

    def to_dict(self):
        return asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d):
        # Missing keys keep their defaults, unknown keys are an error (a typo must not vanish).
        return cls.merge(cls(), d)

    @classmethod
    def merge(cls, p, d):
        # p (a PlantParams) with the overrides in dict d (from_dict's rules).
        d = copy.deepcopy(d)
        names = {f.name for f in fields(cls)}
        for key, value in d.items():
            if key not in names:
                raise KeyError("unknown plant parameter %r" % key)
            if key == "servos":
                if len(value) != len(SERVO_NAMES):
                    raise ValueError("servos needs %d entries" % len(SERVO_NAMES))
                p.servos = [_merge(ServoParams, p.servos[i], v) for i, v in enumerate(value)]
            elif key in ("pad", "switch", "pot", "current", "rail"):
                setattr(p, key, _merge(type(getattr(p, key)), getattr(p, key), value))
            elif key == "home_deg":
                p.home_deg = tuple(float(x) for x in value)
            else:
                setattr(p, key, value)
        return p

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))


def _merge(kind, current, overrides):
    d = asdict(current)
    for key in overrides:
        if key not in d:
            raise KeyError("unknown %s parameter %r" % (kind.__name__, key))
    d.update(overrides)
    return kind(**d)
