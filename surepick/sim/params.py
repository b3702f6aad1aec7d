# The plant's parameter set: everything about the simulated hardware that a fit tool may perturb
# (servo strength, speed, deadband and proportional band; pad spring; sensor offsets and noise;
# the plant's own servo calibration). Round-trips through a plain JSON dict.
# Host-only code (never runs on the board), so dataclasses and floats are fine here.
import copy
import json
from dataclasses import asdict, dataclass, field, fields

from surepick.shared_fsm import servo_cal

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
    # joint back-drives. Hobby servos are "semi-backdrivable"; no datasheet gives the figure, so
    # this is an estimate from motor friction x gear ratio / back-driving efficiency (MG996R:
    # about 1 mN*m x ~250 / ~0.7 -> about a quarter of stall; SG90 about a fifth of stall).
    backdrive_torque_nm: float = 0.0
    # The plant's own calibration (pulse -> servo angle); perturb it to model a mis-set trim.
    min_us: int = servo_cal.DEFAULT_CAL[0]
    max_us: int = servo_cal.DEFAULT_CAL[1]
    trim_us: int = servo_cal.DEFAULT_CAL[2]
    inverted: int = servo_cal.DEFAULT_CAL[3]

    def cal(self):
        return (self.min_us, self.max_us, self.trim_us, self.inverted)


def mg996r(**kw):
    base = dict(kind="MG996R", stall_torque_nm_4v8=0.9, speed_s_per_60deg_4v8=0.17,
                deadband_us=4.0, band_deg=3.0, armature_kgm2=0.004,
                idle_ma=10.0, stall_ma_5v=2500.0, backdrive_torque_nm=0.25)
    base.update(kw)
    return ServoParams(**base)


def sg90(**kw):
    base = dict(kind="SG90", stall_torque_nm_4v8=0.18, speed_s_per_60deg_4v8=0.10,
                deadband_us=5.0, band_deg=8.0, armature_kgm2=0.0006,
                idle_ma=10.0, stall_ma_5v=650.0, backdrive_torque_nm=0.04)
    base.update(kw)
    return ServoParams(**base)


def _default_servos():
    # The gripper's wide proportional band is what makes a 6 mm squeeze draw a middling
    # current instead of stall current (docs/conventions.md, "Gripper servo behaviour").
    return [mg996r(), mg996r(), mg996r(), sg90(), sg90(band_deg=20.0, armature_kgm2=0.0004)]


@dataclass
class PadParams:
    stiffness_n_per_m: float = 1500.0   # sprung pad: 1.5 N per mm of travel
    damping_ns_per_m: float = 0.4       # light: the pad rings on its spring
    travel_mm: float = 4.0              # hard stop behind the pad
    preload_mm: float = 0.3             # spring pre-compression against the front stop
    friction: float = 1.2               # rubber pad
    finger_friction: float = 0.5        # bare finger plastic


@dataclass
class SwitchParams:
    trip_mm: float = 0.8                # pad travel that presses the microswitch
    release_mm: float = 0.6             # differential travel (hysteresis)
    bounce_min_ms: int = 10
    bounce_max_ms: int = 20


@dataclass
class PotParams:
    closed_counts: float = 8000.0       # read_u16 counts at jaw 0 mm
    counts_per_mm: float = 1067.0
    offset_counts: float = 0.0          # calibration error of the plant vs the firmware default
    noise_counts: float = 24.0          # 1 sigma, read_u16 units (about 1.5 LSB of 12 bits)


@dataclass
class CurrentParams:
    offset_counts: float = 1000.0
    counts_per_a: float = 19859.0
    noise_counts: float = 60.0          # 1 sigma: about 3 mA


@dataclass
class RailParams:
    nominal_mv: float = 5800.0
    source_mohm: float = 250.0          # battery + wiring: big currents sag the rail
    divider: float = 3.0
    reset_mv: float = 3800.0            # below this the servos' electronics reset (go limp)
    servo_reset_ms: int = 60            # how long a servo stays limp after the rail recovers
    brownout_mv: float = 3200.0         # rail level during a forced brownout
    noise_counts: float = 16.0


@dataclass
class PlantParams:
    servos: list = field(default_factory=_default_servos)
    pad: PadParams = field(default_factory=PadParams)
    switch: SwitchParams = field(default_factory=SwitchParams)
    pot: PotParams = field(default_factory=PotParams)
    current: CurrentParams = field(default_factory=CurrentParams)
    rail: RailParams = field(default_factory=RailParams)
    servo_frame_ms: int = 20            # 50 Hz PWM: a servo sees a new pulse once per frame
    limp_damping_fraction: float = 0.25  # viscous gear and bearing losses left when unpowered
    home_deg: tuple = (0.0, 90.0, -90.0, -90.0)  # joint angles at start (tool pointing down)
    home_jaw_mm: float = 30.0

    def to_dict(self):
        return asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d):
        # Missing keys keep their defaults, unknown keys are an error (a typo must not vanish).
        p = cls()
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
