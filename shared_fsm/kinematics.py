# The reference arm's kinematics as module functions (docs/conventions.md). The kinematics of
# every kind of arm live in arm.py (Arm.inverse / Arm.forward / Arm.frame); code that is handed
# an arm description uses its Arm. This module is the reference arm's Arm for code that has not
# been handed one (host tools defaulting to the reference arm); its numbers come from
# arm_reference.DESCRIPTION, their one source.
from .arm import (Unreachable, N_ARM_JOINTS, JOINT_NAMES, TOO_FAR, TOO_CLOSE, JOINT_LIMIT,  # noqa: F401
                  BELOW_TABLE, REASON_NAMES, validate)
from .arm_reference import DESCRIPTION

REFERENCE = validate(DESCRIPTION)

BASE_HEIGHT_MM = REFERENCE.H
UPPER_ARM_MM = REFERENCE.U
FOREARM_MM = REFERENCE.F
WRIST_TO_JAW_MM = REFERENCE.T
JOINT_MIN_DEG = tuple(j["min_deg"] for j in REFERENCE.joints)
JOINT_MAX_DEG = tuple(j["max_deg"] for j in REFERENCE.joints)
MIN_RADIUS_MM = REFERENCE.min_radius_mm
MIN_Z_MM = REFERENCE.min_z_mm

inverse = REFERENCE.inverse
forward = REFERENCE.forward
inverse_mdeg = REFERENCE.inverse_mdeg
