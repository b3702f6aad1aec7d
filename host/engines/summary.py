# What every engine's results carry and how a set of cycles is summed up: the versions a run
# was made with, and the counts a batch or report shows (verified placed, false successes, the
# machine's agreement with the judge, faults by name).
import platform


def versions():
    import mujoco
    import numpy
    from surepick.host import __version__
    return {"surepick": __version__, "mujoco": mujoco.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


def summarise(cycles):
    n = len(cycles)
    verified = sum(1 for c in cycles if c["fsm_outcome"] == "placed" and c["judge_outcome"] == "placed")
    return {
        "cycles": n,
        "fsm_placed": sum(1 for c in cycles if c["fsm_outcome"] == "placed"),
        "judge_placed": sum(1 for c in cycles if c["judge_outcome"] == "placed"),
        "verified_placed": verified,
        "false_success": sum(1 for c in cycles if c["false_success"]),
        "false_failure": sum(1 for c in cycles if c["false_failure"]),
        "agreement": round(sum(1 for c in cycles if c["agree"]) / n, 4) if n else None,
        "faults": histogram(c["fsm_fault"] for c in cycles if c["fsm_fault"]),
    }


def histogram(items):
    h = {}
    for i in items:
        h[i] = h.get(i, 0) + 1
    return dict(sorted(h.items()))
