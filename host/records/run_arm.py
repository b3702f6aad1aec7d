"""Which arm a run record ran (docs/run-record.md, "the arm"): run.json's `arm_description`, the
whole description; a record written before surepick kept it names its arm only (`arm`, absent
for the reference), and is read with that name's preset, with a note saying so."""
from surepick.host.arms import files
from surepick.shared_fsm import arm as arm_mod

# What makes two descriptions two different arms (other kinematics, another bench): the rest
# (servo and sensor models, calibration, masses) describes the same arm differently, as a fit does.
WHICH_ARM = ("kind", "geometry", "joints", "bench")


def record_arm(meta):
    """-> (Arm or None, note): the arm a record's run.json says ran. The note is "" when the record
    holds its description; else it says what stands in (a preset by the record's name, the
    reference), or, with None, that the record names an arm that is no preset."""
    d = meta.get("arm_description")
    if d is not None:
        return arm_mod.validate(d), ""
    name = meta.get("arm")
    old = "the record holds no arm description (written before runs kept it)"
    if name is None:
        from surepick.shared_fsm import kinematics
        return kinematics.REFERENCE, old + ": read as the reference arm's, as this version describes it"
    try:
        return files.load(name)[0], old + ": read as the preset '%s' as this version describes it" % name
    except files.DescriptionError:
        return None, old + " and names the arm '%s', which is no preset: give its description with --arm FILE" % name


def differences(arm_a, arm_b):
    """-> (fields that make them different arms, other fields that differ): dotted names."""
    which, other = [], []
    for key, _, _ in files.field_differences(arm_a.to_dict(), arm_b.to_dict()):
        (which if key.split(".")[0] in WHICH_ARM else other).append(key)
    return which, other
