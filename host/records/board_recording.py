# A board's recording as a run record (docs/run-record.md, kind board-recording): the flash-log
# records the monitor stored for one board and epoch, cut into cycles. The log carries events
# only: no ticks and no job poses. The config is the board's own, as the monitor read it at
# connect (Store.configs); a database from before the monitor read it gets the defaults, and
# the record says which (config_source). The arm is the board's /arm.json as the monitor read
# it at connect (Store.arms), written as a simulated run's (arm, arm_description); none stored:
# neither field, and arm_source says why (compare then takes the other run's arm).
import time

from surepick.host import __version__
from surepick.firmware import flashlog
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.shared_fsm.config import Config
from surepick.host.monitor.names import EVENT_RECORD_TYPES, code_name
from surepick.host.monitor.store import RECORD_COLUMNS
from surepick.host.records import runrecord
from surepick.host.user_error import BadInput


class RecordingError(BadInput, ValueError):
    """The store's records cannot be made into one run record (say which to pick)."""


def _no_job(t_ms):
    return {"pick_um": None, "place_um": None, "part_width_um": None, "max_attempts": None, "t_ms": t_ms}


def recording_cycles(rows):
    # rows: one board's records, oldest first -> (cycles, {cycle: [12-int events]}, outside).
    # A cycle opens on a transition out of IDLE and closes on a transition back to IDLE
    # (outcome `placed` or the reason's name) or a fault (the fault's name). A boot while a
    # cycle is open closes it as `incomplete`; the fault the next boot latches for it
    # (INTERRUPTED, an IDLE -> IDLE fault) is then its outcome; if none of the cycle's records
    # were committed, that fault makes a cycle of its own (records_lost). No job poses in the log.
    cycles, events, outside = [], {}, 0
    cur = last = None
    booted = False
    for r in rows:
        ev = tuple(r[c] for c in RECORD_COLUMNS)
        rt = r["rtype"]
        if rt == flashlog.R_BOOT:
            if cur is not None:
                cur["outcome"] = "incomplete"
                cur["restarts"] = cur.get("restarts", 0) + 1
                last, cur = cur, None
            booted = True
            continue
        if rt not in EVENT_RECORD_TYPES:
            continue
        if cur is None and rt == flashlog.R_TRANSITION and ev[3] == states.IDLE and ev[4] != states.IDLE:
            cur = {"cycle": len(cycles), "job": _no_job(ev[1]),
                   "outcome": "incomplete", "board_id": r["board_id"], "first_seq": r["seq"]}
            cycles.append(cur)
            events[cur["cycle"]] = []
            booted = False
        if cur is None:
            if rt == flashlog.R_FAULT and last is not None and last["outcome"] == "incomplete":
                events[last["cycle"]].append(ev)
                last["outcome"] = code_name(ev[5])
            elif rt == flashlog.R_FAULT and booted and ev[3] == states.IDLE:
                # latched at boot for a cycle none of whose records were committed (the power
                # went while it ran): a cycle of its own with only that fault
                c = {"cycle": len(cycles), "job": _no_job(None),
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
        if rt == flashlog.R_FAULT:
            cur["outcome"] = code_name(ev[5])
            last, cur = cur, None
        elif rt == flashlog.R_TRANSITION and ev[4] == states.IDLE:
            cur["outcome"] = "placed" if ev[5] == codes.R_PLACED else code_name(ev[5])
            last, cur = cur, None
    return cycles, events, outside


def _board_config(store, board_epochs):
    # -> (Config, the board section of its settings or None, where it came from).
    from surepick.firmware.settings import BOARD_FIELDS
    from surepick.shared_fsm.config import FIELDS
    snaps = store.configs(*board_epochs[0]) if board_epochs else []
    if not snaps:
        return Config(), None, ("defaults: the monitor stored no settings for this board (it reads them at "
                                "connect since this version; record again with `surepick monitor`)")
    read_at, values = snaps[-1]
    machine = {f[0]: values[f[0]] for f in FIELDS if f[0] in values}
    board = {f[0]: values[f[0]] for f in BOARD_FIELDS if f[0] in values}
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(read_at))
    changed = len({json_key(v) for _, v in snaps}) > 1
    return Config(machine), board, ("read from the board by the monitor at %s%s" % (
        when, "; the settings changed during the recording (%d readings differ): this is the last" % len(snaps)
        if changed else ""))


def _board_arm(store, board_epochs):
    # -> (run.json's arm fields, may be {}, and arm_source: where they came from).
    from surepick.host.arms import files
    from surepick.shared_fsm import arm as arm_mod
    reads = store.arms(*board_epochs[0]) if board_epochs else []
    if not reads:
        return {}, ("not stored: recorded before the monitor read the board's arm description (it reads it at "
                    "connect since this version); compared as the other run's arm")
    read_at, what, description, sentence = reads[-1]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(read_at))
    if description is None:
        return {}, "not known: %s (the monitor at %s); compared as the other run's arm" % (sentence, when)
    changed = len({json_key(d) for _, _, d, _ in reads}) > 1
    return files.record_fields(arm_mod.validate(description)), ("read from the board by the monitor at %s: %s%s" % (
        when, sentence, "; the arm changed during the recording (%d readings differ): this is the last" % len(reads)
        if changed else ""))


def json_key(d):
    import json
    return json.dumps(d, sort_keys=True)


def write(out_dir, recording):
    # Write a recording (build()'s) as the run record in out_dir. -> (cycles, events written).
    meta, cycles, events = recording
    runrecord.write(out_dir, meta, cycles, events, {})
    return len(cycles), sum(len(v) for v in events.values())


def build(store, board_id=None, since=None, source=None):
    # The run record of the store's records (one board and epoch; `board_id` picks one when the
    # store holds several), read whole before anything is written, so a store that cannot be
    # read leaves no folder behind. since: as Store.records takes it. source: what to name as
    # where it came from (e.g. {"tool": ..., "db": ...}).
    # -> (meta, cycles, events). Raises RecordingError when the choice is ambiguous.
    rows = store.records(board_id, since)
    board_epochs = sorted({(r["board_id"], r["epoch"]) for r in rows})
    if len(board_epochs) > 1:
        raise RecordingError("the database holds %d boards/epochs (%s): pick one with --board"
                             % (len(board_epochs), ", ".join("%s#%d" % b for b in board_epochs)))
    cycles, events, outside = recording_cycles(rows)
    fw = None
    if board_epochs:
        b = store.board(board_epochs[0][0])
        fw = b[1] if b else None
    cfg, board_settings, config_source = _board_config(store, board_epochs)
    arm_fields, arm_source = _board_arm(store, board_epochs)
    meta = {
        "kind": "board-recording", "scenario": None, "params": {}, "seed": None,
        "versions": {"surepick": __version__, "firmware": fw},
        "model_hash": None, "plant_params": None,
        "config": cfg.to_dict(), "config_source": config_source, "board_settings": board_settings,
        **arm_fields, "arm_source": arm_source,
        "loop_period_ms": cfg.loop_period_ms,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": dict(source or {}, board_id=board_epochs[0][0] if board_epochs else None,
                       epoch=board_epochs[0][1] if board_epochs else None, records=len(rows),
                       events_outside_cycles=outside, ticks="none: the board does not record ticks"),
    }
    return meta, cycles, events
