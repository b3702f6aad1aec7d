# `surepick job run|stop|report` and the run's line in `job status`: a production run on the
# board (RUN, RUN_STOP, RUN_STATUS in docs/protocol.md; docs/production-run.md).
import time

from surepick.host.user_error import FAILED, INTERRUPTED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.event_follow import events_until
from surepick.host import production
from surepick.shared_fsm import codes, link, run_codes


def fields(args):
    """The RUN frame's fields from --count/--until-stopped and the job file (or the reference
    cell's job); a bad file or value is refused (exit 2) before the port is opened."""
    from surepick.host.link.jobs import DEFAULT_PICK_MM, DEFAULT_PLACE_MM, DEFAULT_WIDTH_MM
    from surepick.host.teleop import jobfile
    if args.count is not None and args.count < 1:
        raise CommandError("--count must be 1 or more (--until-stopped runs without a count)")
    args.config_needed = {}
    if args.job is None:
        job = jobfile.Job(jobfile.Pose(*DEFAULT_PICK_MM), jobfile.Pose(*DEFAULT_PLACE_MM), DEFAULT_WIDTH_MM)
    else:
        job = jobfile.load(args.job)
        args.config_needed = job.config_overrides()
    grid = lambda p: (0, 0, 1, 1) if p is None else p.grid_um()  # noqa: E731
    try:
        return production.run_args(run_codes.RUN_UNTIL_STOPPED if args.until_stopped else args.count, job.link_job(),
                                   grid(job.pick_pattern), grid(job.place_pattern), job.ready or (0, 0),
                                   1 if job.place_pattern is not None and job.place_pattern.kind == "bin" else 0,
                                   args.config_needed.get("approach_height_um"))
    except ValueError as e:
        raise CommandError(str(e)) from None


def run(c, args, run_fields):
    from surepick.host.cli.job import _refused
    r = c.request(link.T_RUN, run_fields, 5.0, collect=(link.T_EVENT,))
    if not r.ok:
        if r.code == link.E_UNKNOWN_TYPE:
            raise CommandError("this firmware has no production run: deploy this version (`surepick deploy`)",
                               FAILED)
        if r.code == link.E_BAD_VALUE and r.payload and r.payload[0] == "unreachable":
            raise CommandError("refused: the %s pattern's slot %s is out of the arm's reach" % tuple(r.payload[1:3]),
                               FAILED)
        if r.code == link.E_BUSY and not r.payload:
            raise CommandError("refused: the board is busy (a job, a run, a rescue or a calibration): "
                               "`surepick job status%s` says which" % _port(args), FAILED)
        raise CommandError("refused: %s" % _refused(c, r, args.port), FAILED)
    print("run accepted: %s; `surepick job status%s` follows it, `surepick job stop%s` ends it after a cycle"
          % ("until stopped" if run_fields[0] == 0 else "%d cycles" % run_fields[0], _port(args), _port(args)))
    if args.config_needed:
        print("approach_height_um: %d (from %s; the board's setting from this run on)"
              % (args.config_needed["approach_height_um"], args.job))
    if not args.wait:
        return OK
    try:
        return _follow(c, args, r.frames)
    except KeyboardInterrupt:
        print("interrupted: stopped following, not the run; `surepick job stop%s` ends it after the cycle"
              % _port(args))
        return INTERRUPTED


def _follow(c, args, frames):
    from surepick.host.link.answers import event_text
    for e in events_until(c, frames, time.monotonic() + args.timeout):
        if e[2] == codes.K_RUN:
            print("  " + event_text(e), flush=True)
            if e[5] == run_codes.R_RUN_STOP:
                for line in production.report_lines(_final_report(c)):
                    print(line)
                return OK if e[9] in production.NORMAL_ENDS else FAILED
    raise CommandError("the run did not end within %.0f s: it goes on on the board (`surepick job status%s`)"
                       % (args.timeout, _port(args)), FAILED)


def _final_report(c, within_s=30.0):
    # The board logs the run's last records to flash once the arm has settled: read the log
    # until its STOP record is there (or the time is up: the report then says what it has).
    deadline = time.monotonic() + within_s
    while True:
        rep = production.report(production.read_log(c)[0])
        if (rep is not None and rep["stop"] is not None) or time.monotonic() > deadline:
            return rep
        time.sleep(0.5)


def stop(c, args):
    r = c.request(link.T_RUN_STOP, (), 3.0)
    if not r.ok:
        raise CommandError("no production run is going on" if r.code == link.E_STATE else
                           "refused: %s" % r.code_name, FAILED)
    print("stop: the run ends after the current cycle (the arm parks at rest, nothing held is let go)")
    return OK


def report(c, args):
    try:
        records, oldest = production.read_log(c)
    except ValueError as e:
        raise CommandError(str(e), FAILED) from None
    rep = production.report(records)
    for line in production.report_lines(rep):
        print(line)
    if oldest > 1 and rep is None:
        print("(the log rotated past records before %d: an older run's are gone)" % oldest)
    return OK


def report_from_db(args):
    """`job report --db FILE [--board ID]`: the last run in the records the monitor stored."""
    import os

    from surepick.host.monitor.store import RECORD_COLUMNS, Store
    if not os.path.isfile(args.db):
        raise CommandError("no database at %s (run `surepick monitor --db %s` first)" % (args.db, args.db))
    store = Store(args.db, readonly=True)
    try:
        rows = store.records(args.board)
    finally:
        store.close()
    boards = sorted({r["board_id"] for r in rows})
    if not boards:
        raise CommandError("%s holds no records%s" % (args.db, " of board %s" % args.board if args.board else ""),
                           FAILED)
    if len(boards) > 1:
        raise CommandError("%s holds several boards (%s): say which with --board" % (args.db, ", ".join(boards)))
    rep = production.report([(r["seq"], r["rtype"], [r[k] for k in RECORD_COLUMNS]) for r in rows])
    print("board %s, from %s" % (boards[0], args.db))
    for line in production.report_lines(rep):
        print(line)
    return OK


def status_line(c):
    """RUN_STATUS -> (payload, the line `job status` prints), or None (no run since boot, or a
    firmware without runs)."""
    r = c.request(link.T_RUN_STATUS, (), 3.0)
    if not r.ok or not r.payload or r.payload[0] == 0 or len(r.payload) < 9:
        return None
    active, cycles, count, placed, faulted, skipped, why, slot, picks = r.payload[:9]
    text = "run: %s, cycle %d%s, placed %d, faulted %d, skipped %d" % (
        "running" if active == 1 else "ended", cycles, " of %d" % count if count else " (until stopped)",
        placed, faulted, skipped)
    if picks > 1:
        text += ", next pick slot %d of %d" % (slot, picks)
    if active == 2:
        text += "; stopped: %s" % production.stop_text(why)
    return r.payload, text


def _port(args):
    from surepick.host.board_state import port_text
    return port_text(args.port)
