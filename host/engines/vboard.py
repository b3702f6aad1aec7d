# A scenario's cycles run by the FIRMWARE on the virtual board (host/vboard: the unix
# `micropython` with the virtual HAL, in lockstep with the world of engines/world_service.py)
# and written as a run record of kind `virtual-board` (records/runrecord.py, docs/run-record.md):
# the same directory `surepick sim run` writes, so replay, compare and fit read both alike.
#
# Each cycle is one fresh board (a new flash with the firmware deployed and the run's settings
# in its /config.json, a new world for the scenario, seed and cycle, as the in-process engine
# builds one per cycle) driven as the
# in-process engine drives its controller: CALIBRATE current read in the tick at
# sim.world.CAL_AT_MS, then the scenario's JOB read in the tick where that calibration ends;
# both travel over the console while virtual time holds, so the run depends on the scenario and
# seed only, and matches the in-process engine tick for tick.
#
# Where each file comes from:
#   events.csv    the firmware's EVENT frames, as they came over the console
#   cycles.jsonl  the outcome from those frames, the judge from the world service (sim/judge.py)
#   ticks.csv     the firmware does not stream its machine's per-tick inputs, but the world service
#                 records every exchange (the raw ADC counts and pin levels the board was sent, the
#                 pulses it wrote back). A shadow board -- the firmware's own controller
#                 (firmware/controller.py) on WorldPins -- is run on those recorded readings
#                 instead of a world. Its Machine.inp at each step is the firmware's (same driver code on the
#                 same counts), and so are its commands and state. The pulses column is the
#                 firmware's own, as the plant received them. The reconstruction is checked, not
#                 assumed: the shadow's pulses must equal the firmware's at every tick and its
#                 events the firmware's EVENT frames; run.json source.reconstruction says so, and
#                 a mismatch is reported (ReconstructionError unless allow_mismatch).
import shutil
import socket
import tempfile
import time
from pathlib import Path

from surepick.firmware import settings as fw_settings
from surepick.shared_fsm import codes
from surepick.shared_fsm import link
from surepick.shared_fsm import states
from surepick.shared_fsm.config import reads_in
from surepick.shared_fsm.machine import Job
from surepick.firmware import calibrate
from surepick.host.engines import loopfigures
from surepick.host.engines.inproc import machine_belief
from surepick.host.engines.world_service import EXCHANGE_FIELDS
from surepick.sim.world import CAL_AT_MS, CYCLE_LIMIT_MS, JUDGE_TAIL_MS
from surepick.host.user_error import Failure

# The current calibration (firmware/calibrate.py) started in the tick at CAL_AT_MS waits
# STILL_MS still, then averages one sample a tick for SAMPLE_MS: it ends, and the JOB is read, in
# the tick at 100 + 300 + 64 = 464 ms at 4 ms (request_ticks). The in-process engine starts its
# job after that tick.
SOURCE_COMMAND = "surepick sim run --engine vboard"


class VboardRunError(Failure, RuntimeError):
    # The board did not do what the run needs (no boot, a refused request, a dead link).
    pass


class ReconstructionError(VboardRunError):
    # The shadow board did not reproduce the firmware's pulses or events from the recorded
    # readings: ticks.csv would not be the firmware's.
    pass


def firmware_version():
    from surepick.firmware.app import FW_VERSION
    return FW_VERSION


def install_firmware(flash, micropython=None):
    # What `surepick deploy` installs on a virtual board: the manifest's modules as .mpy for the
    # interpreter's own native architecture (deploy reads it from sys.implementation._mpy too).
    from surepick.firmware.mpy_arch import march_of
    from surepick.host.deploy import install_compiled
    from surepick.host.vboard.interp import find_micropython
    from surepick.host.vboard.runtime import loads_mpy
    version = loads_mpy(find_micropython(micropython), full=True)
    if version is None:
        raise VboardRunError("cannot read the .mpy version of the micropython interpreter")
    install_compiled(flash, march_of(version))


# ---- the console ---------------------------------------------------------------------------------

class BoardConsole:
    # A TCP client of the virtual board's console with the host's frame parser (also the tests').
    def __init__(self, address):
        from surepick.host.link.frames import FrameParser
        host, port = address.replace("socket://", "").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.settimeout(0.05)
        self.text = bytearray()
        self.parser = FrameParser(on_text=self._text)
        self.frames = []

    def _text(self, b):
        self.text.extend(b)
        del self.text[:-4000]

    def pump(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return False
            self.frames.extend(self.parser.feed(data))
        return True

    def wait(self, pred, timeout):
        end = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < end:
            for f in self.frames[seen:]:
                if pred(f):
                    return f
            seen = len(self.frames)
            if not self.pump(0.05):
                break
        for f in self.frames[seen:]:
            if pred(f):
                return f
        return None

    def send(self, frame):
        self.sock.sendall(frame)

    def close(self):
        self.sock.close()

    def tail(self):
        return bytes(self.text[-1500:]).decode("utf-8", "replace")


def _held_at(ps, t_ms, timeout):
    # Virtual time stands at t_ms waiting for a console line (not at an earlier hold).
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ps.holding.is_set() and ps.now_ms >= t_ms:
            return True
        ps.wait_holding(0.05)
        time.sleep(0.001)
    return False


def first_tick_ms(settings):
    """The board ms of the loop's first tick after a boot at 0: the boot's boot_sense_ms // period
    + 1 reads come first, a period apart (firmware/controller.py boot)."""
    period = settings.cfg.loop_period_ms
    return (settings.board["boot_sense_ms"] // period + 1) * period


def request_ticks(settings):
    """(the tick that handles CALIBRATE, the tick that handles the JOB), board ms: the first tick
    at or after CAL_AT_MS, and the tick in which that calibration ends."""
    period = settings.cfg.loop_period_ms
    first = first_tick_ms(settings)
    cal_at = first + reads_in(CAL_AT_MS - first, period) * period if CAL_AT_MS > first else first
    return cal_at, cal_at + (reads_in(calibrate.STILL_MS, period) + calibrate.sample_ticks(period)) * period


def _reply_to(rid):
    return lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid


def _cycle_end(f):
    # Back in IDLE after a job (PLACED), or any fault.
    return f.ftype == link.T_EVENT and (f.fields[2] == codes.K_FAULT
                                        or (f.fields[4] == states.IDLE and f.fields[3] != states.IDLE))


def write_arm(flash, arm):
    # The arm description as deploy --arm ships it (/arm.json, compact JSON); None: the reference
    # arm, which a board with no /arm.json runs.
    if arm is None:
        return
    from surepick.host.arms import files
    from surepick.firmware import arm_file
    (Path(flash) / arm_file.PATH.lstrip("/")).write_text(files.compact_json(arm))


# ---- one cycle on the board ---------------------------------------------------------------------

class VboardCycle:
    """What one cycle on the virtual board left: the world service (with its exchange log and
    judge), the frames, the flash directory, the job as sent, wall seconds."""

    def __init__(self, scenario, values, seed, cycle, plant_params=None, flash=None, timeout_s=180,
                 on_progress=None, settings=None, arm=None):
        self.on_progress = on_progress or (lambda now_ms, state: None)   # virtual time, firmware state
        self.scenario = scenario
        self.values = values
        self.seed = int(seed)
        self.cycle = int(cycle)
        self.plant_params = plant_params
        self.flash = flash
        self.settings = settings if settings is not None else fw_settings.Settings()   # the run's
        self.timeout_s = timeout_s
        self.arm = arm                 # an Arm (None: the reference): the board's /arm.json and the world's
        self.frames = []
        self.ended_at = None

    def run(self):
        from surepick.host.engines.world_service import WorldService
        from surepick.host.vboard import VirtualBoard
        from surepick.host.engines.vboard_world import wire
        install_firmware(self.flash)
        settings = self.settings
        settings.save(str(self.flash) + fw_settings.PATH)     # the board boots with the run's settings
        write_arm(self.flash, self.arm)                         # ... and the run's arm, as deploy --arm ships it
        ps = WorldService(self.scenario, self.seed, self.values, self.plant_params, self.cycle, cfg=settings.cfg,
                          arm=self.arm)
        self.ps = ps
        self.log = ps.record()
        period = settings.cfg.loop_period_ms
        cal_at, job_at = request_ticks(settings)
        pick, place, width = ps.job_um()
        self.job = (pick, place, width)
        cal_line = link.request(link.T_CALIBRATE, 1, (link.CAL_CURRENT,))
        job_line = link.job(2, pick, place, width)
        # The firmware reads at most link_rx_bytes of a request per tick: a line held at t is
        # whole, and handled, ceil(len / link_rx_bytes) - 1 ticks later. Held so that each is
        # handled in the tick the in-process engine handles it in.
        rx = settings.board["link_rx_bytes"]
        cal_hold = cal_at - ((len(cal_line) + rx - 1) // rx - 1) * period
        job_hold = job_at - ((len(job_line) + rx - 1) // rx - 1) * period
        ps.hold_for_line_at(cal_hold)
        ps.hold_for_line_at(job_hold)
        # The in-process engine's end: the machine is idle after the step that ended the cycle,
        # then JUDGE_TAIL_MS more; the plant holds there by itself (world_service.py).
        ps.hold_after_cycle_end(JUDGE_TAIL_MS)
        ps.hold_for_line_at(CYCLE_LIMIT_MS)       # a cycle that never ends stops there, not where the host looked
        self.requests = (("calibrate", cal_at), ("job", job_at))   # (what, the tick that handles it)
        # The run's own board: no control channel and no entry in the person's board registry, so
        # `--port auto`, `doctor` or a poller in another terminal can neither find it nor take
        # its console (a second client there changes the ticks the run records).
        board = wire(VirtualBoard(self.flash, world_service=ps, scenario=self.scenario, seed=self.seed,
                                  control=False), ps)
        t0 = time.monotonic()
        deadline = t0 + self.timeout_s
        with board:
            con = BoardConsole(board.address)
            try:
                if not _held_at(ps, cal_hold, 60):
                    raise VboardRunError("the board never reached the calibration tick (t=%d ms); console:\n%s"
                                         % (cal_hold, con.tail()))
                con.sock.sendall(cal_line)
                if not _held_at(ps, job_hold, 30):
                    raise VboardRunError("the board never reached the job tick (t=%d ms); console:\n%s"
                                         % (job_hold, con.tail()))
                con.sock.sendall(job_line)
                r = con.wait(_reply_to(1), 30)
                if r is None or r.fields[1] != link.OK:
                    raise VboardRunError("CALIBRATE current was refused: %r; console:\n%s" % (r, con.tail()))
                r = con.wait(_reply_to(2), 30)
                if r is None or r.fields[1] != link.OK:
                    raise VboardRunError("the scenario's JOB was refused: %r (read in the tick at %d ms, where the "
                                         "calibration should have ended); console:\n%s" % (r, job_at, con.tail()))
                end = None
                while end is None and ps.now_ms < CYCLE_LIMIT_MS and time.monotonic() < deadline:
                    end = con.wait(_cycle_end, 0.25)
                    ev = [f for f in con.frames if f.ftype == link.T_EVENT]
                    self.on_progress(ps.now_ms, ev[-1].fields[4] if ev else states.IDLE)
                if end is not None:
                    # The in-process engine's end: the machine is idle after the step that ended
                    # the cycle, then JUDGE_TAIL_MS more. Virtual time stops there (a hold nobody answers),
                    # so the run is as long as the host simulator's and the judge sees the same.
                    self.ended_at = end.fields[1]
                    until = end.fields[1] + period + JUDGE_TAIL_MS
                    if ps.end_hold_ms is None:      # an end the plant could not see (IDLE -> IDLE)
                        ps.hold_for_line_at(until)
                    elif ps.end_hold_ms != until:
                        raise VboardRunError("the plant held at %d ms, the cycle's end event says %d ms"
                                             % (ps.end_hold_ms, until))
                    if not _held_at(ps, until, 60):
                        raise VboardRunError("the board did not reach the end of the cycle's tail (t=%d ms)" % until)
                else:
                    until = CYCLE_LIMIT_MS
                    while not (ps.holding.is_set() and ps.now_ms >= until) and time.monotonic() < deadline:
                        con.pump(0.02)
                con.pump(0.1)
                self.boots = board.boot_count
            finally:
                con.close()
        self.wall_s = time.monotonic() - t0
        self.frames = con.frames
        self.events = [tuple(f.fields) for f in con.frames if f.ftype == link.T_EVENT]
        return self


# ---- the shadow board: the firmware's machine inputs from the recorded raw readings -------------

_I = {n: i for i, n in enumerate(EXCHANGE_FIELDS)}     # one recorded exchange (engines/world_service.py)


class _EndOfRecord(Exception):
    pass


class RecordedWorld:
    # Stands where sim.world.World stands for the shadow controller's WorldPins, serving the
    # readings the firmware was sent, exchange by exchange; it checks that what the shadow
    # writes is what the firmware wrote.
    def __init__(self, log, pulse_tol=0, arm=None):
        self.log = log
        self.arm = arm                # the board's arm: the shadow controller boots with it
        self.pulse_tol = pulse_tol    # us: pulses read back from PWM registers carry their resolution
        self.k = 0
        self.on_exchange = None       # callable(exchange row) after each advance
        self.mismatches = []          # (t_ms, what, shadow, firmware)

    @property
    def now_ms(self):
        return self.log[self.k][_I["now_ms"]]

    def read_inputs(self):
        ex = self.log[self.k]
        f = ex[_I["flags"]]
        return (ex[_I["pot"]], ex[_I["current"]], ex[_I["rail"]], f & 1, (f >> 1) & 1, (f >> 2) & 1)

    def exchange(self, pulses, state, ms):
        if self.k + 1 >= len(self.log):
            raise _EndOfRecord()
        self.k += 1
        ex = self.log[self.k]
        fw = [ex[_I["p0"] + i] for i in range(5)]
        if ex[_I["advance_ms"]] != ms:
            self.mismatches.append((ex[_I["now_ms"]], "advance_ms", ms, ex[_I["advance_ms"]]))
        if pulses is not None and fw != list(pulses) and (
                not self.pulse_tol or max(abs(a - b) for a, b in zip(fw, pulses)) > self.pulse_tol):
            self.mismatches.append((ex[_I["now_ms"]] - ex[_I["advance_ms"]], "pulses", list(pulses), fw))
        if self.on_exchange is not None:
            self.on_exchange(ex)
        return None


def reconstruct(bc, settings, pulse_tol=0):
    """Run the shadow board on bc's recorded exchanges, with the board's settings (the run's, as
    its /config.json held them). -> dict with ticks (rows without the
    cycle column), events (12-int tuples), job (cycles.jsonl job), board_cal, initial_jaw_um,
    fault_state, and the check: pulse/event mismatches and the state-byte agreement.
    pulse_tol: pulses within this many us count as equal (read back from PWM registers)."""
    from surepick.host.engines.inproc import SimulatedBoard
    log = [e for e in bc.log if e[_I["conn"]] == bc.log[0][_I["conn"]]]
    if len(log) < len(bc.log):
        raise ReconstructionError("cycle %d: the controller restarted mid-cycle (%d connections to the plant); "
                                  "the virtual-board run record does not reconstruct restarts yet"
                                  % (bc.cycle, len({e[0] for e in bc.log})))
    world = RecordedWorld(log, pulse_tol, getattr(bc, "arm", None))
    rows = []
    pending = []      # the row of the step whose pulses the next exchange carries

    def on_exchange(ex):
        if pending:
            r = pending.pop()
            r[-6:-1] = [ex[_I["p0"] + i] for i in range(5)]
            # The state byte this exchange carried: the firmware's state as its EVENT frames said.
            r.append(ex[_I["state"]])
    world.on_exchange = on_exchange

    def watch(ctl):
        m = ctl.m
        step = type(m).step

        def watched(now):
            inp = m.inp
            row = [0, now, inp.pot_counts, inp.switch_pressed, inp.current_ma, inp.beam_broken,
                   inp.estop, inp.rail_mv, inp.arrived_seq, inp.error_seq, inp.jaw_done]
            step(m, now)
            o = m.out
            row += [o.move_seq, o.move_kind, o.move_gentle, o.x_um, o.y_um, o.z_um, o.pitch_mdeg, o.jaw_um,
                    o.hold, m.state, -1, -1, -1, -1, -1, -1]
            rows.append(row)
            del pending[:]
            pending.append(row)
        m.step = watched

    # A fresh flash, as the firmware's (its servos start at the home pose), with its settings.
    board = SimulatedBoard(world, settings)
    ctl = board.ctl
    watch(ctl)
    m = ctl.m
    out = {"job": None, "board_cal": None, "initial_jaw_um": int(m.out.jaw_um)}
    pick, place, width = bc.job
    job = Job(pick, place, width)

    def start_job(now):
        err = ctl.start_job(job)
        if err:
            raise ReconstructionError("the shadow machine refused the job the firmware took (error %d)" % err)
        out["job"] = {"pick_um": list(job.pick), "place_um": list(job.place), "t_ms": now + board.period,
                      "part_width_um": job.part_width_um, "max_attempts": job.max_attempts}
    handlers = {"calibrate": board._start_calibration, "job": start_job}
    todo = list((t, what) for what, t in bc.requests)
    events = []
    ev = m.events
    seen = [ev.last_seq()]

    def drain():
        # as the in-process engine drains the ring: every event, whatever the ring's size
        while seen[0] < ev.last_seq():
            seen[0] += 1
            e = ev.get(seen[0])
            if e is not None:
                events.append(tuple(e))
    try:
        while True:
            after = None
            if todo and board.now == todo[0][0]:
                after = handlers[todo.pop(0)[1]]
            try:
                board.step(after)
            finally:
                drain()
            if out["board_cal"] is None and ctl.cal is None and "calibrate" not in [w for _, w in todo]:
                out["board_cal"] = {"current_offset_counts": int(ctl.current.offset)}
    except _EndOfRecord:
        pass
    finally:
        board.close()
    filled = [r for r in rows if len(r) == 28]          # steps whose pulses reached the plant
    # The state byte of the exchange that ended a tick is the state the firmware's EVENT frames
    # had said by then; it must be the shadow's state after that step (0xFF: none said yet).
    state_lag = sum(1 for r in filled if r[27] != 0xFF and r[27] != r[20])
    rows = [r[:-1] for r in filled]
    out["ticks"] = rows
    out["events"] = events
    out["fault_state"] = states.name(m.fault_state) if m.fault else None
    out["mismatches"] = world.mismatches[:20]
    out["pulse_mismatches"] = sum(1 for x in world.mismatches if x[1] == "pulses")
    out["state_byte_mismatches"] = state_lag
    return out


def _event_key(e):
    return tuple(e[1:12])     # sequence numbers aside: the firmware's log numbers its own


# ---- the run ----------------------------------------------------------------------------------

def run_cycle(scenario, values, seed, cycle, plant_params=None, workdir=None, allow_mismatch=False,
              timeout_s=180, on_progress=None, cfg_overrides=None, arm=None):
    """One cycle on a fresh virtual board. -> (cycle record dict for cycles.jsonl, events,
    tick rows, VboardCycle). cfg_overrides: the run's machine config (the board's /config.json)."""
    settings = fw_settings.Settings(machine=cfg_overrides)
    tmp = None
    if workdir is None:
        tmp = workdir = tempfile.mkdtemp(prefix="surepick-vbrun-")
    flash = Path(workdir) / ("flash_%03d" % cycle)
    if flash.exists():
        shutil.rmtree(flash)
    try:
        bc = VboardCycle(scenario, values, seed, cycle, plant_params, flash, timeout_s, on_progress, settings, arm)
        bc.run()
        shadow = reconstruct(bc, settings)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    fw_events = [_event_key(e) for e in bc.events]
    sh_events = [_event_key(e) for e in shadow["events"]]
    events_equal = sh_events == fw_events
    check = {"pulse_mismatches": shadow["pulse_mismatches"], "events_equal": events_equal,
             "state_byte_mismatches": shadow["state_byte_mismatches"],
             "ticks": len(shadow["ticks"]), "exchanges": len(bc.log)}
    if not allow_mismatch and (shadow["pulse_mismatches"] or not events_equal):
        raise ReconstructionError(
            "cycle %d: the shadow board did not reproduce the firmware (pulse mismatches %d, events equal %s); "
            "first: %r; firmware events %r, shadow %r" % (cycle, shadow["pulse_mismatches"], events_equal,
                                                          shadow["mismatches"][:3], fw_events, sh_events))
    _loop_us_from_clock(shadow["ticks"])
    rec = _cycle_record(bc, shadow, check)
    return rec, list(bc.events), shadow["ticks"], bc


def _loop_us_from_clock(rows):
    # loop_us: the period from the previous tick on the firmware's own clock (virtual time).
    prev = None
    for r in rows:
        r[-1] = -1 if prev is None or prev[0] != r[0] else (r[1] - prev[1]) * 1000
        prev = r


def _cycle_record(bc, shadow, check):
    ev = bc.events
    fsm_outcome, fsm_fault, fault_state = machine_belief(ev, bc.ended_at is not None)
    j_out, j_reason, _ = bc.ps.verdict()
    return {
        "cycle": bc.cycle, "seed": bc.seed, "job": shadow["job"],
        "outcome": "placed" if fsm_outcome == "placed" else (fsm_fault or fsm_outcome),
        "fsm_outcome": fsm_outcome, "fsm_fault": fsm_fault,
        "fault_state": (shadow["fault_state"] or fault_state) if fsm_fault else None,
        "attempts": max([e[6] for e in ev] or [0]),
        "judge_outcome": j_out, "judge_reason": j_reason,
        "sim_ms": bc.ps.now_ms, "wall_s": round(bc.wall_s, 3),
        "initial_jaw_um": shadow["initial_jaw_um"], "board_cal": shadow["board_cal"], "restarts": [],
        "reconstruction": check,
        # the firmware's own figures for the cycle (its last TELEMETRY frame's cycle window)
        "loop": loopfigures.last_telemetry(bc.frames),
    }


def run(scenario, seed=0, cycles=1, overrides=None, plant_params=None, workdir=None,
        allow_mismatch=False, log=None, first=0, on_cycle=None, on_progress=None, cfg_overrides=None, arm=None):
    """Run cycles first..cycles-1 of a scenario on the virtual board. -> what its run record holds
    (records/runrecord.py write): (run.json meta, cycle records, events, ticks).
    cfg_overrides: the run's machine config, written to every cycle's board as its /config.json.
    on_cycle(meta, record, events, tick rows) as each cycle finishes (before the next starts);
    on_progress(cycle, virtual ms, firmware state) while one runs."""
    from surepick.sim import scenarios
    from surepick.sim.params import PlantParams
    sc = scenarios.get(scenario)
    values = sc.resolve(overrides)
    if plant_params is not None:
        plant_params = PlantParams.from_dict(plant_params).to_dict()
    log = log or (lambda s: None)
    recs, events, ticks = [], {}, {}
    model_hash = None
    for k in range(first, cycles):
        prog = None if on_progress is None else (lambda now, state, k=k: on_progress(k, now, state))
        rec, ev, rows, bc = run_cycle(sc.name, values, seed, k, plant_params, workdir, allow_mismatch,
                                      on_progress=prog, cfg_overrides=cfg_overrides, arm=arm)
        model_hash = model_hash or bc.ps.plant.model_hash()
        recs.append(rec)
        events[k] = ev
        ticks[k] = rows
        log("cycle %d: firmware %s%s, judge %s (%s), attempts %d, %.1f s virtual in %.1f s, %d ticks reconstructed"
            % (k, rec["fsm_outcome"], (" " + rec["fsm_fault"]) if rec["fsm_fault"] else "", rec["judge_outcome"],
               rec["judge_reason"], rec["attempts"], rec["sim_ms"] / 1000.0, rec["wall_s"], len(rows)))
        if on_cycle is not None:
            on_cycle(_meta(sc, values, seed, model_hash, plant_params, recs, cfg_overrides, arm), rec, ev, rows)
    return _meta(sc, values, seed, model_hash, plant_params, recs, cfg_overrides, arm), recs, events, ticks


def _meta(sc, values, seed, model_hash, plant_params, recs, cfg_overrides=None, arm=None):
    # run.json of a virtual-board run of `recs` (records/runrecord.py).
    from surepick.sim.params import PlantParams
    from surepick.host.engines.summary import versions
    cfg = fw_settings.Settings(machine=cfg_overrides).cfg.to_dict()
    v = versions()
    v["firmware"] = firmware_version()
    meta = {"kind": "virtual-board", "scenario": sc.name, "params": values, "seed": int(seed), "versions": v,
            "model_hash": model_hash, "config": cfg, "loop_period_ms": cfg["loop_period_ms"],
            "plant_params": PlantParams.from_dict(plant_params or {}).to_dict(),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"command": SOURCE_COMMAND, "engine": "firmware on host/vboard (unix micropython, "
                       "firmware/hal/virtual.py) in lockstep with engines/world_service.py",
                       "ticks": "inputs, commands and state reconstructed by a shadow controller (the firmware's "
                       "drivers) from the raw readings the plant sent; pulses are the firmware's own",
                       "reconstruction": {"pulse_mismatches": sum(r["reconstruction"]["pulse_mismatches"] for r in recs),
                                          "events_equal": all(r["reconstruction"]["events_equal"] for r in recs)}}}
    from surepick.host.arms import files
    meta.update(files.record_fields(arm))
    return meta
