# `surepick log export|stats`: read the monitor's SQLite store (never writes to it).
#   export  every stored flash-log record as CSV or JSON, with names for states and codes
#   stats   faults by code and by state, cycles between faults, success rate over time
import sys

EXIT_USAGE = 2
RTYPE_NAMES = {1: "transition", 2: "fault", 3: "boot", 4: "note", 5: "counters"}
_R_FAULT, _R_TRANSITION, _R_NOTE = 2, 1, 4


def add_arguments(parser):
    sub = parser.add_subparsers(dest="log_action", metavar="ACTION", required=True)
    ex = sub.add_parser("export", help="write the stored records as CSV or JSON",
                        description="Write every stored flash-log record (oldest first) to stdout "
                                    "or --out, with state, kind and reason names beside the numbers.")
    ex.add_argument("--db", required=True, metavar="FILE", help="the monitor's SQLite file")
    ex.add_argument("--format", metavar="csv|json", help="csv or json (required unless --run)")
    ex.add_argument("--run", metavar="DIR",
                    help="write a run record instead (docs/run-record.md, kind board-recording): "
                         "run.json, cycles.jsonl, events.csv and a header-only ticks.csv")
    ex.add_argument("--since", metavar="WHEN",
                    help="only records received since: an ISO date/time (2026-05-01 or "
                         "2026-05-01T10:00), an age (30m, 12h, 7d) or seq:N (log seq above N)")
    ex.add_argument("--board", metavar="ID", help="only this board")
    ex.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    st = sub.add_parser("stats", help="faults by code and state, cycles between faults, success rate",
                        description="Summarise the stored records: faults by code and by state, "
                                    "successful cycles between faults, success rate per hour and per boot.")
    st.add_argument("--db", required=True, metavar="FILE", help="the monitor's SQLite file")
    st.add_argument("--board", metavar="ID", help="only this board")
    st.add_argument("--json", action="store_true", help="print the summary as JSON")


def _fail(msg):
    print("surepick log: %s" % msg, file=sys.stderr)
    return EXIT_USAGE


def parse_since(text, now=None):
    # -> ("time", epoch seconds) or ("seq", N). Raises ValueError with a message.
    import datetime
    import re
    import time
    now = time.time() if now is None else now
    if text.startswith("seq:"):
        n = text[4:]
        if not n.isdigit():
            raise ValueError("seq:N wants a number, got %r" % text)
        return "seq", int(n)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text)
    if m:
        return "time", now - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        dt = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("--since %r is not an ISO date/time, an age like 12h, or seq:N" % text) from None
    return "time", dt.timestamp()


def _open(path):
    import os

    from surepick.host.monitor.store import Store, StoreError
    if not os.path.isfile(path):
        raise ValueError("no database at %s (run `surepick monitor --db %s` first)" % (path, path))
    try:
        return Store(path, readonly=True)
    except StoreError as e:
        raise ValueError(str(e)) from None


def _rows(store, board=None, since=None):
    from surepick.host.monitor.store import RECORD_COLUMNS
    q = "SELECT board_id, epoch, seq, rtype, %s, received_at FROM records" % ", ".join(RECORD_COLUMNS)
    where, args = [], []
    if board:
        where.append("board_id=?")
        args.append(board)
    if since:
        where.append("seq>?" if since[0] == "seq" else "received_at>=?")
        args.append(since[1])
    if where:
        q += " WHERE " + " AND ".join(where)
    q += " ORDER BY board_id, epoch, seq"
    cols = ("board_id", "epoch", "seq", "rtype") + RECORD_COLUMNS + ("received_at",)
    return [dict(zip(cols, r)) for r in store.db.execute(q, args)]


def _named(row):
    from surepick.host.monitor.model import code_name, state_name
    import datetime
    d = dict(row)
    d["type"] = RTYPE_NAMES.get(row["rtype"], str(row["rtype"]))
    d["received"] = datetime.datetime.fromtimestamp(row["received_at"]).isoformat(timespec="milliseconds")
    if row["rtype"] in (1, 2, 4):
        d["from"] = state_name(row["from_state"])
        d["to"] = state_name(row["to_state"])
        d["reason_name"] = code_name(row["reason"])
    else:
        d["from"] = d["to"] = d["reason_name"] = ""
    return d


def export(args):
    import csv
    import json
    if getattr(args, "run", None):
        return export_run(args)
    if args.format not in ("csv", "json"):
        return _fail("unknown format %r: use csv or json" % args.format)
    try:
        since = parse_since(args.since) if args.since else None
        store = _open(args.db)
    except ValueError as e:
        return _fail(str(e))
    rows = [_named(r) for r in _rows(store, args.board, since)]
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    try:
        if args.format == "json":
            json.dump(rows, out, indent=1)
            out.write("\n")
        else:
            cols = ["board_id", "epoch", "seq", "type", "received", "from", "to", "reason_name",
                    "rtype", "ev_seq", "t_ms", "kind", "from_state", "to_state", "reason", "attempt",
                    "pot_counts", "switch_pressed", "current_ma", "beam_broken", "present_mask"]
            w = csv.DictWriter(out, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    finally:
        if args.out:
            out.close()
    if args.out:
        print("wrote %d records to %s" % (len(rows), args.out), file=sys.stderr)
    return 0


def recording_cycles(rows):
    # rows: one board's records, oldest first -> (cycles, {cycle: [12-int events]}, outside).
    # A cycle opens on a transition out of IDLE and closes on a transition back to IDLE
    # (outcome `placed` or the reason's name) or a fault (the fault's name). A boot while a
    # cycle is open closes it as `incomplete`; the fault the next boot latches for it
    # (INTERRUPTED, an IDLE -> IDLE fault) is then its outcome; if none of the cycle's records
    # were committed, that fault makes a cycle of its own (records_lost). No job poses in the log.
    from surepick.shared_fsm import codes
    from surepick.shared_fsm import states
    from surepick.host.monitor.model import code_name
    from surepick.host.monitor.store import RECORD_COLUMNS
    cycles, events, outside = [], {}, 0
    cur = last = None
    booted = False
    for r in rows:
        ev = tuple(r[c] for c in RECORD_COLUMNS)
        rt = r["rtype"]
        if rt == 3:
            if cur is not None:
                cur["outcome"] = "incomplete"
                cur["restarts"] = cur.get("restarts", 0) + 1
                last, cur = cur, None
            booted = True
            continue
        if rt not in (1, 2, 4):
            continue
        if cur is None and rt == 1 and ev[3] == states.IDLE and ev[4] != states.IDLE:
            cur = {"cycle": len(cycles), "job": {"pick_um": None, "place_um": None,
                                                 "part_width_um": None, "max_attempts": None,
                                                 "t_ms": ev[1]},
                   "outcome": "incomplete", "board_id": r["board_id"], "first_seq": r["seq"]}
            cycles.append(cur)
            events[cur["cycle"]] = []
            booted = False
        if cur is None:
            if rt == 2 and last is not None and last["outcome"] == "incomplete":
                events[last["cycle"]].append(ev)
                last["outcome"] = code_name(ev[5])
            elif rt == 2 and booted and ev[3] == states.IDLE:
                # latched at boot for a cycle none of whose records were committed (the power
                # went while it ran): a cycle of its own with only that fault
                c = {"cycle": len(cycles), "job": {"pick_um": None, "place_um": None,
                                                   "part_width_um": None, "max_attempts": None,
                                                   "t_ms": None},
                     "outcome": code_name(ev[5]), "board_id": r["board_id"], "first_seq": r["seq"],
                     "last_seq": r["seq"], "records_lost": True}
                cycles.append(c)
                events[c["cycle"]] = [ev]
            else:
                outside += 1
            booted = False
            continue
        events[cur["cycle"]].append(ev)
        cur["last_seq"] = r["seq"]
        if rt == 2:
            cur["outcome"] = code_name(ev[5])
            last, cur = cur, None
        elif rt == 1 and ev[4] == states.IDLE:
            cur["outcome"] = "placed" if ev[5] == codes.R_PLACED else code_name(ev[5])
            last, cur = cur, None
    return cycles, events, outside


def export_run(args):
    import time

    from surepick import __version__
    from surepick.shared_fsm.config import Config
    from surepick.records import runrecord
    try:
        since = parse_since(args.since) if args.since else None
        store = _open(args.db)
    except ValueError as e:
        return _fail(str(e))
    rows = _rows(store, args.board, since)
    boards = sorted({(r["board_id"], r["epoch"]) for r in rows})
    if len(boards) > 1:
        return _fail("the database holds %d boards/epochs (%s): pick one with --board"
                     % (len(boards), ", ".join("%s#%d" % b for b in boards)))
    cycles, events, outside = recording_cycles(rows)
    fw = None
    if boards:
        b = store.board(boards[0][0])
        fw = b[1] if b else None
    cfg = Config()
    meta = {
        "kind": "board-recording", "scenario": None, "params": {}, "seed": None,
        "versions": {"surepick": __version__, "firmware": fw},
        "model_hash": None, "plant_params": None,
        # The log does not carry the board's config: these are the defaults it boots with.
        "config": cfg.to_dict(), "config_source": "defaults (not recorded by the board)",
        "loop_period_ms": cfg.loop_period_ms,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {"tool": "surepick log export --run", "db": args.db,
                   "board_id": boards[0][0] if boards else None,
                   "epoch": boards[0][1] if boards else None, "records": len(rows),
                   "events_outside_cycles": outside, "ticks": "none: the board does not record ticks"},
    }
    runrecord.write(args.run, meta, cycles, events, {})
    print("wrote a run record of %d cycles (%d events) to %s; no ticks (load it with ticks=False)"
          % (len(cycles), sum(len(v) for v in events.values()), args.run), file=sys.stderr)
    return 0


def summarise(rows):
    # rows: records (dicts) oldest first. -> dict of the statistics.
    import collections
    import time

    from surepick.shared_fsm import codes
    from surepick.shared_fsm import states
    from surepick.host.monitor.model import code_name, state_name
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
        if rt == 3:
            boot = r["from_state"]  # a boot record's 4th int (stored as from_state) is boot_count
            continue
        ok = ((rt == _R_TRANSITION and r["to_state"] == states.IDLE and r["reason"] == codes.R_PLACED)
              or (rt == _R_NOTE and r["reason"] == codes.R_PLACED))
        if ok:
            run += 1
            hours[hour][0] += 1
            boots[boot][0] += 1
        elif rt == _R_FAULT:
            by_code[code_name(r["reason"])] += 1
            by_state[state_name(r["from_state"])] += 1
            between.append(run)
            run = 0
            if r["from_state"] != states.IDLE:
                hours[hour][1] += 1
                boots[boot][1] += 1

    def rate(ok_failed):
        n = ok_failed[0] + ok_failed[1]
        return None if n == 0 else round(100.0 * ok_failed[0] / n, 1)

    total_ok = sum(v[0] for v in hours.values())
    total_failed = sum(v[1] for v in hours.values())
    return {
        "records": len(rows),
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


def stats(args):
    import json
    try:
        store = _open(args.db)
    except ValueError as e:
        return _fail(str(e))
    rows = _rows(store, args.board)
    s = summarise(rows)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    pct = lambda v: "-" if v is None else "%.1f %%" % v  # noqa: E731
    print("%d records; cycles ok %d, failed %d, success %s"
          % (s["records"], s["cycles_ok"], s["cycles_failed"], pct(s["success_rate"])))
    print("\nfaults by code:")
    for k, v in s["faults_by_code"].items() or [("(none)", "")]:
        print("  %-22s %s" % (k, v))
    print("\nfaults by state:")
    for k, v in s["faults_by_state"].items() or [("(none)", "")]:
        print("  %-22s %s" % (k, v))
    b = s["cycles_between_faults"]
    print("\ncycles between faults: %s faults, mean %s, min %s, max %s; %d since the last fault"
          % (b["faults"], b["mean"], b["min"], b["max"], b["since_last_fault"]))
    print("\nsuccess rate by hour (received):")
    for h, v in s["success_rate_by_hour"].items():
        print("  %s  ok %4d  failed %4d  %s" % (h, v["ok"], v["failed"], pct(v["rate"])))
    print("\nsuccess rate by boot:")
    for h, v in s["success_rate_by_boot"].items():
        print("  boot %-6s ok %4d  failed %4d  %s" % (h, v["ok"], v["failed"], pct(v["rate"])))
    return 0


def run(args):
    return export(args) if args.log_action == "export" else stats(args)
