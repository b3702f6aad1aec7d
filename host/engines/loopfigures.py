# The loop's own timing for a cycle, as every engine's cycle record carries it (`loop` in
# report.json and cycles.jsonl): period_us (mean period), tick_median_us / tick_p99_us /
# tick_max_us (the work per tick), overruns (ticks whose work took longer than the period),
# gc_max_us (the longest garbage collection the loop ran at rest), ticks (how many were counted;
# ticks that wrote flash or collected garbage at rest are not). Measured by the firmware itself
# (firmware/telemetry.py LoopStats): on a board it comes in the TELEMETRY frame's cycle fields,
# in the in-process simulator from the same LoopStats timing the controller's tick on the host.
from surepick.shared_fsm import link

_TEL = {name: i for i, name in enumerate(link.SCHEMA[link.T_TELEMETRY][3])}


def from_telemetry(fields):
    """`loop` from a TELEMETRY frame's fields; None when the firmware sends no cycle fields."""
    if fields is None or len(fields) <= _TEL["gc_max_us"]:
        return None
    return {"period_us": fields[_TEL["cycle_period_us"]], "tick_median_us": fields[_TEL["tick_median_us"]],
            "tick_p99_us": fields[_TEL["tick_p99_us"]], "tick_max_us": fields[_TEL["tick_max_us"]],
            "overruns": fields[_TEL["cycle_overruns"]], "gc_max_us": fields[_TEL["gc_max_us"]],
            "ticks": fields[_TEL["cycle_ticks"]]}


def last_telemetry(frames):
    """`loop` from the last TELEMETRY frame among host.link.frames.Frame objects."""
    tel = [f.fields for f in frames if f.ftype == link.T_TELEMETRY]
    return from_telemetry(tel[-1] if tel else None)


def from_stats(st):
    """`loop` from a firmware/telemetry.py LoopStats."""
    return {"period_us": st.cycle_period_us(), "tick_median_us": st.percentile(500),
            "tick_p99_us": st.percentile(990), "tick_max_us": st.c_max_us, "overruns": st.c_overruns,
            "gc_max_us": st.c_gc_max_us, "ticks": st.c_ticks}
