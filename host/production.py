"""A production run from the host's side (docs/production-run.md): the RUN frame from a job
(file or options), the board's log read back, and the morning report built from the run's own
records (codes.R_RUN_*) and the machine's events between them."""
import statistics

from surepick.shared_fsm import codes, link, run_codes

# What the report says for each codes.STOP_*
STOP_TEXT = {
    run_codes.STOP_COUNT: "the cycles asked for are done",
    run_codes.STOP_PICKS_DONE: "every pick slot was visited",
    run_codes.STOP_PLACES_FULL: "every place slot is filled",
    run_codes.STOP_REQUESTED: "stopped on request (`surepick job stop`) after the cycle",
    run_codes.STOP_FAULT: "a fault the run never goes on after",
    run_codes.STOP_FAILED_PART: "a part failed its attempts (run_on_fail is stop)",
    run_codes.STOP_IN_ROW: "run_stop_in_row faulted cycles in a row",
    run_codes.STOP_RATE: "more than run_rate_pct of the last run_rate_window cycles faulted",
    run_codes.STOP_READY_TIMEOUT: "the part was not ready within run_ready_timeout_ms",
    run_codes.STOP_REFUSED: "the board refused a cycle's job",
}
NORMAL_ENDS = (run_codes.STOP_COUNT, run_codes.STOP_PICKS_DONE, run_codes.STOP_PLACES_FULL, run_codes.STOP_REQUESTED)
_X, _Y, _Z, _VALUE = 7, 8, 9, 11          # a K_RUN record's numbers (run_codes.RUN_FIELDS)


def run_args(count, job_um, pick_grid=(0, 0, 1, 1), place_grid=(0, 0, 1, 1), ready=(0, 0), place_wrap=0,
             approach_um=None):
    """The RUN frame's fields after the request id. job_um: (pick, place, width_um, attempts or
    None) as jobfile.Job.link_job gives it; place_wrap 1: the place slots are drop spots used in
    turn (a bin); approach_um: the job file's approach height (RUN's last field, as JOB's: the
    board's approach_height_um from this run on; None: the board's own). ValueError when the
    link cannot carry them."""
    pick, place, width, attempts = job_um
    a = [count] + list(pick) + list(place) + [width, attempts or 0] + list(pick_grid) + list(place_grid)
    a += list(ready) + [place_wrap]
    if approach_um is not None:
        a.append(approach_um)
    if link.check(link.T_RUN, [1] + a) != link.OK:
        raise ValueError("a value is outside what the link carries (poses and pitches within 1 m, width "
                         "0.001-100 mm, at most 255 slots a side, count below 2^30)")
    return a


def stop_text(why, fault=0):
    text = STOP_TEXT.get(why, "stop code %d" % why)
    if fault:
        text += " (%s)" % codes.name(fault)
    return text


def read_log(client, timeout=3.0):
    """Every record the board's log still holds -> ([(log_seq, rtype, 12 ints)], oldest seq)."""
    out, after, oldest = [], 0, 0
    while True:
        r = client.request(link.T_LOG_SINCE, (after,), timeout, collect=(link.T_LOG,))
        if not r.ok:
            raise ValueError("the board refused LOG_SINCE: %s" % r.code_name)
        for f in r.frames:
            out.append((f.fields[0], f.fields[1], list(f.fields[2:])))
        if len(r.payload) > 3 and isinstance(r.payload[3], int):
            oldest = r.payload[3]
        last = r.payload[1] if len(r.payload) > 1 and isinstance(r.payload[1], int) else after
        if not (len(r.payload) > 2 and r.payload[2] == 1) or last <= after:
            return out, oldest
        after = last


def is_run(e, reason=None):
    return e[2] == codes.K_RUN and (reason is None or e[5] == reason)


def report(records):
    """The last run in `records` (the board's log records as read_log gives them, or event
    records (12 ints) alone) -> a dict of its figures, or None when the log holds no run."""
    from surepick.firmware import flashlog
    rows = [(rt, e) for _, rt, e in records] if records and len(records[0]) == 3 else \
        [(flashlog.R_NOTE, e) for e in records]
    starts = [i for i, (rt, e) in enumerate(rows) if rt != flashlog.R_BOOT and is_run(e, run_codes.R_RUN_START)]
    if starts:
        rows = rows[starts[-1]:]
        start = rows[0][1]
        rows = rows[1:]
    else:
        # a long run: the log rotated past its start; what is left of it, up to its STOP
        first = [i for i, (rt, e) in enumerate(rows) if rt != flashlog.R_BOOT and is_run(e)]
        if not first:
            return None
        rows = rows[first[0]:]
        start = None
    cycles, skips, waits, faults = [], [], 0, {}
    stop, reset = None, False
    for rt, e in rows:
        if rt == flashlog.R_BOOT:
            reset = True          # the board restarted: the run is over, not resumed
            break
        if is_run(e, run_codes.R_RUN_CYCLE):
            cycles.append((e[_X], e[_Y], e[_Z], e[_VALUE]))
            if e[_VALUE] != codes.R_PLACED:
                faults[codes.name(e[_VALUE])] = faults.get(codes.name(e[_VALUE]), 0) + 1
        elif is_run(e, run_codes.R_RUN_SKIP):
            skips.append(e[_Y])
        elif is_run(e, run_codes.R_RUN_WAIT):
            waits += 1
        elif is_run(e, run_codes.R_RUN_STOP):
            stop = (e[_Z], e[_VALUE], e[_X], e[_Y])
            break
    times = sorted(c[2] for c in cycles if c[3] == codes.R_PLACED)
    streak = best = 0
    for c in cycles:
        streak = streak + 1 if c[3] == codes.R_PLACED else 0
        best = max(best, streak)
    placed = sum(1 for c in cycles if c[3] == codes.R_PLACED)
    return {
        "count": None if start is None else start[_X],
        "pick_slots": None if start is None else start[_Y], "place_slots": None if start is None else start[_Z],
        # the STOP record's totals hold when the log kept only the run's later cycles
        "cycles": stop[2] if stop is not None else len(cycles), "placed": stop[3] if stop is not None else placed,
        # what the figures below were counted over: the cycles still in the log
        "from_cycle": cycles[0][0] if cycles else None, "partial": start is None,
        "faults": faults, "skipped_slots": skips, "ready_waits": waits,
        "cycle_ms_median": statistics.median(times) if times else None,
        "cycle_ms_p95": _p95(times), "longest_fault_free": best,
        "stop": None if stop is None else {"why": run_codes.STOP_NAMES[stop[0]] if stop[0] < len(run_codes.STOP_NAMES)
                                           else stop[0], "text": stop_text(stop[0], stop[1]),
                                           "fault": codes.name(stop[1]) if stop[1] else None,
                                           "normal": stop[0] in NORMAL_ENDS},
        "reset": reset,
    }


def _p95(sorted_ms):
    # nearest rank: the smallest cycle time at least 95% of the cycles took no longer than
    if not sorted_ms:
        return None
    k = -(-95 * len(sorted_ms) // 100)
    return sorted_ms[k - 1]


def report_lines(rep):
    if rep is None:
        return ["the board's log holds no production run"]
    count = ("its start rotated out of the log" if rep["count"] is None else
             "until stopped" if rep["count"] == 0 else "count %d" % rep["count"])
    out = ["run: %s, %d cycles, %d placed" % (count, rep["cycles"], rep["placed"])]
    if rep["partial"] and rep["from_cycle"] is not None:
        out.append("(the figures below count cycle %d on: the log rotated past the earlier ones)" % rep["from_cycle"])
    if rep["faults"]:
        out.append("faults: " + ", ".join("%s %d" % kv for kv in sorted(rep["faults"].items())))
    else:
        out.append("faults: none")
    if rep["cycle_ms_median"] is not None:
        out.append("cycle time (placed cycles): median %.0f ms, p95 %.0f ms" % (rep["cycle_ms_median"],
                                                                              rep["cycle_ms_p95"]))
    out.append("longest run without a fault: %d cycles" % rep["longest_fault_free"])
    out.append("slots skipped: %s" % (", ".join(str(s) for s in rep["skipped_slots"]) or "none"))
    if rep["ready_waits"]:
        out.append("part-ready checks that found nothing: %d" % rep["ready_waits"])
    if rep["stop"] is not None:
        out.append("stopped: %s%s" % (rep["stop"]["why"], ": " + rep["stop"]["text"]))
    elif rep["reset"]:
        out.append("stopped: the board restarted mid-run (a reset, a brownout): the run does not resume")
    else:
        out.append("still running (no STOP record yet)")
    return out
