# Which arm a served board (`surepick board`, engines vboard and rp2040) has, and the flash that
# says so: the world must be built from the same description the firmware boots with (its
# /arm.json), or the firmware's kinematics drive an arm that is not there.
#   --arm NAME|FILE given: the board's /arm.json becomes it (a flash directory: written, as
#   deploy --arm would ship it; a new emulated flash image: built with it; a saved image that
#   holds another description: refused, deploy --arm to it instead);
#   not given: the world is built from the flash's own /arm.json (none, or one the firmware
#   refuses: the reference arm's world, and the board itself keeps that arm still).
import json
import os

from surepick.firmware import arm_file
from surepick.shared_fsm import arm as arm_mod

ARM_PATH = arm_file.PATH


def _parse(data):
    # bytes of an /arm.json -> an Arm, or None when the firmware would refuse it
    try:
        return arm_mod.validate(json.loads(data.decode()))
    except (ValueError, UnicodeError, arm_mod.ArmError):
        return None


def for_flash_dir(flash_dir, arm=None):
    """-> (Arm or None for the reference, note for the person or ""). Writes /arm.json when
    arm is given."""
    from surepick.host.arms import files
    path = os.path.join(str(flash_dir), ARM_PATH.lstrip("/"))
    if arm is not None:
        text = files.compact_json(arm)
        old = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                old = f.read()
        if old == text.encode():
            return arm, ""
        with open(path, "w") as f:
            f.write(text)
        return arm, "%s: %s (%s), as deploy --arm ships it%s" % (
            ARM_PATH, arm.name, arm.kind, "; it replaced the flash's own" if old is not None else "")
    if not os.path.exists(path):
        return None, ""
    with open(path, "rb") as f:
        found = _parse(f.read())
    if found is None:
        return None, "%s does not pass the check: the world is the reference arm's, the board keeps its arm still" % ARM_PATH
    return found, "arm: %s (%s), from the flash's %s" % (found.name, found.kind, ARM_PATH)


def image_files(arm):
    """The extra files of a new emulated flash image: {"/arm.json": bytes} or None."""
    if arm is None:
        return None
    from surepick.host.arms import files
    return {ARM_PATH: files.compact_json(arm).encode()}


def for_image(image_path, arm=None):
    """A saved emulated flash image: -> Arm or None (the reference). ValueError when --arm names
    another description than the image holds (deploy --arm changes a board's description)."""
    from surepick.host.engines.rp2040 import flashimage
    with open(image_path, "rb") as f:
        held = flashimage.read_fs(f.read()).get(ARM_PATH)
    if arm is None:
        return None if held is None else _parse(held)
    from surepick.host.arms import files
    if held != files.compact_json(arm).encode():
        raise ValueError("the flash image %s holds %s, not --arm %s: deploy it to the board "
                         "(surepick deploy --port ... --arm %s), or start from a new flash"
                         % (image_path, "another /arm.json" if held else "no /arm.json (the reference arm)",
                            arm.name, arm.name))
    return arm
