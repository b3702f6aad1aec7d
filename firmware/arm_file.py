# /arm.json: the arm description deploy ships (docs/arm-description.md), read once at boot.
# Whatever the file holds the board boots. A description that fails validation (one field
# named, shared_fsm/arm.py) or cannot be read (torn, erased, too big, not JSON) is not used in
# part: the board keeps the arm's servos unpowered, refuses every job, rescue and teleop, and
# names the field in its rejects ("arm", field, "invalid"; HELLO, STATUS, REJECTS). A board
# whose flash has no /arm.json runs the reference arm, as every board did before descriptions.
import gc
import json
import sys

from . import fsutil                          # host: surepick.firmware (the simulator)
from ..shared_fsm import arm as arm_mod

PATH = "/arm.json"
FIRMWARE = __name__[:__name__.rfind(".")]      # the packages' dotted names, as the board
SHARED = FIRMWARE[:FIRMWARE.rfind(".")] + ".shared_fsm"    # imports them
MAX_FILE_BYTES = 8192    # a full description is about 3 KB of compact JSON


def _reference():
    from ..shared_fsm.arm_reference import DESCRIPTION
    return arm_mod.validate(DESCRIPTION)


def drop(package, name):
    # Forget a module imported for a moment only (the validator's schema, the reference's dict,
    # the copier): the Arm keeps copies of what it needs, and the heap gets the rest back.
    full = package + "." + name
    if full in sys.modules:
        del sys.modules[full]
    pkg = sys.modules.get(package)
    try:
        delattr(pkg, name)
    except Exception:              # not imported, or no attribute to drop
        pass


def load(path=PATH, rejected=None):
    # -> (Arm, error text). error "" means the description is valid (or absent: the reference
    # arm); otherwise the Arm returned is the reference arm, which the controller never moves.
    # Never raises.
    if sys.implementation.name != "micropython":
        return _load(path, rejected)
    arm, err = _load_packed(path, rejected)
    # Collected here, not in _load_packed: the collector scans the stack, and that call's frame
    # (dead now, below this one) still held the original Arm.
    gc.collect()
    return arm, err


def _load_packed(path, rejected):
    # On the board: the validator and the reference's dict are dropped once the description is
    # checked, and the Arm, built among the parse's and the validation's garbage, is copied into
    # the holes their collection opens (repack.py). Measured on the emulated RP2040, this is what
    # keeps the largest free block after boot above 32 KB (docs/rp2040.md, heap on the chip).
    from . import repack          # boot only, dropped with the validator
    # The parse on a collected heap: its garbage (about 20 KB) fills the holes the settings' parse
    # left instead of climbing to the heap's top, where a float of it kept by a stale word on the
    # C stack split the largest free block after boot (docs/rp2040.md, heap on the chip).
    gc.collect()
    try:
        arm, err = _load(path, rejected)
    finally:
        drop(SHARED, "arm_check")
        drop(SHARED, "arm_reference")
        gc.collect()
    arm = repack.instance(arm)
    drop(FIRMWARE, "repack")
    return arm, err


def _load(path, rejected):
    status, data = fsutil.read_bounded(path, MAX_FILE_BYTES)
    if status == fsutil.READ_MISSING:
        return _reference(), ""
    reason = fsutil.READ_REASONS[status]
    d = None
    if reason is None:
        try:
            d = json.loads(data.decode())
        except UnicodeError:        # erased flash (0xff), a torn multi-byte character
            reason = "utf8"
        except MemoryError:         # deep nesting: the parser's stack did not fit
            reason = "no_memory"
        except Exception:           # ValueError, RuntimeError (recursion): not JSON
            reason = "json"
        data = None
    if reason is None and not isinstance(d, dict):
        reason = "not_object"
    if reason is None:
        try:
            return arm_mod.validate(d), ""
        except arm_mod.ArmError as e:
            d = None
            if rejected is not None:
                rejected.add("arm", e.field, "invalid")
            return _reference(), str(e)
        except MemoryError:
            reason = "no_memory"
        except Exception:           # a bug in the validator must not stop the boot
            reason = "unreadable"
    d = None
    if rejected is not None:
        rejected.add("arm", "-", reason)
    return _reference(), "%s: %s" % (path, reason)
