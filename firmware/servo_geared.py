# servo.drive for an arm with a geared joint (Arm.geared: EEZYbot's base): servo mdeg = zero +
# joint mdeg * gear // 1000. Its own module, loaded with such an arm only: native code lives in
# the heap, and an ungeared arm's board keeps those bytes (docs/arm-description.md).
from ..shared_fsm.compat import micropython


@micropython.native
def drive(servos, joints, jaw_um, dt_ms, zero, gear):
    servos[0].update(joints[0] * gear[0] // 1000 + zero[0], dt_ms)
    servos[1].update(joints[1] * gear[1] // 1000 + zero[1], dt_ms)
    servos[2].update(joints[2] * gear[2] // 1000 + zero[2], dt_ms)
    servos[3].update(joints[3] * gear[3] // 1000 + zero[3], dt_ms)
    servos[4].update(jaw_um * 4, dt_ms)
