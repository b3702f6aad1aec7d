# Statistics over the monitor store's records (`surepick log stats`): faults by code and by
# state, successful cycles between faults, success rate per hour received and per boot.
import collections
import time

from surepick.firmware import flashlog
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.host.monitor.names import code_name, fault_state_name


def summarise(rows, gaps=()):
    # rows: Store.records dicts, oldest first; gaps: Store.gaps rows (records the board's log
    # rotated away before the monitor fetched them). -> dict of the statistics.
    by_code = collections.Counter()
    by_state = collections.Counter()
    between = []
    run = 0
    hours = collections.defaultdict(lambda: [0, 0])
    boots = collections.defaultdict(lambda: [0, 0])
    boot = 0
    for r in rows:
        rt = r["rtype"]
        hour = time.strftime("%Y-%m-%d %H:00", time.localtime(r["received_at"]))
        if rt == flashlog.R_BOOT:
            boot = r["from_state"]  # a boot record's 4th int (stored as from_state) is boot_count
            continue
        ok = ((rt == flashlog.R_TRANSITION and r["to_state"] == states.IDLE and r["reason"] == codes.R_PLACED)
              or (rt == flashlog.R_NOTE and r["reason"] == codes.R_PLACED))
        if ok:
            run += 1
            hours[hour][0] += 1
            boots[boot][0] += 1
        elif rt == flashlog.R_FAULT:
            by_code[code_name(r["reason"])] += 1
            by_state[fault_state_name(r["reason"], r["from_state"])] += 1
            between.append(run)
            run = 0
            # A fault out of a cycle failed it; INTERRUPTED is latched at the boot after the cycle
            # the power cut ended (from IDLE), once (firmware/app.py): that cycle failed too.
            if r["from_state"] != states.IDLE or r["reason"] == codes.F_INTERRUPTED:
                hours[hour][1] += 1
                boots[boot][1] += 1

    def rate(ok_failed):
        n = ok_failed[0] + ok_failed[1]
        return None if n == 0 else round(100.0 * ok_failed[0] / n, 1)

    total_ok = sum(v[0] for v in hours.values())
    total_failed = sum(v[1] for v in hours.values())
    return {
        "records": len(rows),
        "lost_to_rotation": sum(g[4] for g in gaps),
        "cycles_ok": total_ok,
        "cycles_failed": total_failed,
        "success_rate": rate((total_ok, total_failed)),
        "faults_by_code": dict(by_code.most_common()),
        "faults_by_state": dict(by_state.most_common()),
        "cycles_between_faults": {
            "faults": len(between),
            "mean": round(sum(between) / len(between), 1) if between else None,
            "min": min(between) if between else None,
            "max": max(between) if between else None,
            "since_last_fault": run,
        },
        "success_rate_by_hour": {h: {"ok": v[0], "failed": v[1], "rate": rate(v)} for h, v in sorted(hours.items())},
        "success_rate_by_boot": {str(b): {"ok": v[0], "failed": v[1], "rate": rate(v)} for b, v in sorted(boots.items())},
    }
