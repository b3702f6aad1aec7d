# Hardware in the loop, host side: the board (a real Pico or the virtual board) runs its firmware
# with its raw sensor readings taken from HIL_SENSORS frames and its servo pulses reported in
# HIL_ACT frames (docs/protocol.md); this side owns the world (sim/world.py: the plant, the
# scenario's injections and the judge), driven through the world service's exchange (pulses in,
# advance, readings out) without its socket: the link replaces the socket.
#
#   lockstep  one sensor frame -> one board tick -> one HIL_ACT; the plant advances one loop
#             period per tick, so the run depends on scenario and seed only (not on wall time)
#   realtime  the plant is paced by the wall clock and a sensor frame goes out every period;
#             the board steps on its own clock with the latest frame; link latency (sensor frame
#             sent -> first HIL_ACT that used it) and its jitter are measured
#
# The run's settings are the board's own: read over the link (CONFIG_GET, as the monitor does)
# before HIL begins. The plant advances by the board's loop period, the judge's lift height is its
# approach height, the input mirror has its sensor settings, and the run record says so.
import queue
import statistics
import threading
import time

from surepick.shared_fsm import link
from surepick.host.link.answers import refusal
from surepick.shared_fsm import states
from surepick.host.engines.inproc import machine_belief
from surepick.host.engines.world_service import KEEP, NO_STATE, REPLY, WorldService, _Cut
from surepick.firmware.controller import Sensors
from surepick.firmware import settings as fw_settings
from surepick.shared_fsm.machine import Inputs
from surepick.sim import scenarios
from surepick.sim.world import CYCLE_LIMIT_MS, JUDGE_TAIL_MS
from surepick.host.link.client import LinkClient, LinkError

JOB_AT_MS = 100           # plant ms at which the job is given (after the first readings settle)
ACT_TIMEOUT_S = 2.0       # lockstep: no HIL_ACT this long after a sensor frame -> give up


class HilError(LinkError):
    """A HIL cycle that cannot go on (board refused HIL, stopped answering)."""


class HilWorldService(WorldService):
    # WorldService without its server: step() is one lockstep exchange.
    def step(self, advance_ms, pulses, state=NO_STATE):
        _, now, pot, cur, rail, flags = REPLY.unpack(self._exchange(advance_ms, pulses, state))
        return now, pot, cur, rail, flags & 7     # bits 0..2 are link.HIL_PIN_* levels


class InputMirror:
    # The firmware's own input drivers (firmware/controller.py Sensors, the board's settings)
    # over the raw readings sent to the board: what the board's machine read, for the run
    # record's tick rows. Its pins are the HIL frame's: ADC slots 0..2 and the link's pin bits.
    class _Pins:
        def __init__(self):
            self.adc = [0, 0, 0]
            self.pins = 0

        def setup(self, pins):
            pass

        def read_u16(self, adc):
            return self.adc[adc]

        def read_pin(self, bit):
            return 1 if self.pins & bit else 0

    def __init__(self, settings):
        s = fw_settings.Settings(dict(settings.board), settings.cfg.to_dict())
        # The mirror's pin map: the frame's slots and bits stand where the GPIOs would.
        s.board.update({"adc_pot": 0, "adc_current": 1, "adc_rail": 2, "pin_switch": link.HIL_PIN_SWITCH,
                        "pin_beam": link.HIL_PIN_BEAM, "pin_estop": link.HIL_PIN_ESTOP})
        self.hal = self._Pins()
        self.sensors = Sensors(self.hal, s)
        self.inp = Inputs()

    def read(self, pot, cur, rail, pins):
        self.hal.adc[:] = [pot, cur, rail]
        self.hal.pins = pins
        inp = self.inp
        self.sensors.read(inp)
        return [inp.pot_counts, inp.switch_pressed, inp.current_ma, inp.beam_broken, inp.estop, inp.rail_mv]


def read_settings(client):
    """The board's settings over the link (host/board_settings.py read_all) as the firmware's
    Settings: its board section and its machine config."""
    from surepick.host import board_settings as bs
    values = bs.read_all(client)
    board = {k: v for k, v in values.items() if bs.BY_KEY[k].section == "board"}
    machine = {k: v for k, v in values.items() if bs.BY_KEY[k].section == "machine"}
    try:
        return fw_settings.Settings(board, machine)
    except ValueError as e:
        raise HilError("the board's settings do not check out here (%s): is it running this firmware?" % e)


def percentile(xs, q):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q / 100.0 * (len(s) - 1))))]


class HilCycle:
    """One HIL cycle of a scenario against the board on `port`. run() -> the cycle's record.
    The plant, the loop period and the config exist once open() has read the board's settings."""

    def __init__(self, port, scenario="nominal", seed=0, mode="lockstep", log=None, client=None, arm=None):
        # arm: the simulated arm (an Arm; None the reference): the board must run the same
        # description (deploy --arm), its firmware's kinematics drive this arm's servos
        if mode not in ("lockstep", "realtime"):
            raise ValueError("mode must be lockstep or realtime")
        self.mode = mode
        self.scenario = scenarios.get(scenario).name      # ValueError: unknown scenario
        self.seed = int(seed)
        self.arm = arm
        self.settings = None      # the board's (firmware Settings), read by open()
        self.cfg = None
        self.period = None
        self.world = None
        self.mirror = None
        self.client = client or LinkClient(port)
        self.log = log or (lambda msg: None)
        self.events = []
        self.ticks = []
        self.acts = 0
        self.identity = None
        self.latency_s = []
        self.board_period_us = []
        self.step_us = []
        self._seq = 0
        self._sent = {}
        self._state = states.IDLE
        self._fault = 0
        self._pulses = [KEEP] * 5
        self._job_rid = None
        self._job_reply = None
        self.job = None
        self.wall_s = 0.0
        self.late_sends = 0
        self._started = False
        self.progress = None      # progress(plant ms, board state) after each tick (a person waits ~30 s)

    # ---- link helpers ----

    def _next_seq(self):
        self._seq = self._seq + 1 if self._seq < 65535 else 1
        return self._seq

    def _on_frame(self, f):
        t = f.ftype
        if t == link.T_EVENT:
            self.events.append(tuple(f.fields))
        elif t == link.T_REPLY and self._job_rid is not None and f.fields[0] == self._job_rid:
            self._job_reply = f.fields[1:]

    def _act(self, f, readings, t_recv=None):
        # One HIL_ACT: pulses and state the board's tick produced; a tick row for the record.
        fl = f.fields
        sid = fl[0]
        sent = self._sent.pop(sid, None)
        if sent is not None:
            self.latency_s.append((t_recv or time.perf_counter()) - sent[0])
        self._pulses = list(fl[3:8])
        self._state = fl[8]
        self._fault = fl[9]
        if self.job is not None and (fl[8] != states.IDLE or fl[9]):
            self._started = True
        self.step_us.append(fl[10])
        self.acts += 1
        if self.mode == "realtime":
            self.board_period_us.append(fl[11])
        inp = readings.get(sid)
        if inp is not None:
            self.ticks.append([0, fl[2]] + inp + [-1, -1, -1] + [-1] * 9 + [fl[8]] + list(fl[3:8])
                              + [fl[11] if self.mode == "realtime" else -1])

    def _send_sensors(self, now, pot, cur, rail, pins, readings):
        sid = self._next_seq()
        frame = link.hil_sensors(sid, now & 0x3FFFFFFF, pot, cur, rail, pins)
        self._sent[sid] = (time.perf_counter(), now)
        readings[sid] = self.mirror.read(pot, cur, rail, pins)
        if len(readings) > 256:
            for k in list(readings)[:-64]:
                del readings[k]
        if len(self._sent) > 256:
            for k in list(self._sent)[:-64]:
                del self._sent[k]
        self.client.send(frame)
        return sid

    # ---- the cycle ----

    def open(self):
        c = self.client
        c.on_frame = self._on_frame
        if not c.connected:
            c.open()
        deadline = time.monotonic() + 15
        while True:
            try:
                r = c.request(link.T_PING, (), timeout=2.0)
                break
            except LinkError:
                if time.monotonic() > deadline:
                    raise
        self.identity = tuple(r.payload[:2])
        self._take_settings(read_settings(c))
        return self.identity

    def _take_settings(self, settings):
        # The run's settings are the board's: the plant steps at its period, the judge lifts to
        # its approach height, the mirror reads as its drivers do.
        self.settings = settings
        self.cfg = settings.cfg
        self.period = self.cfg.loop_period_ms
        if self.world is None:
            self.world = HilWorldService(self.scenario, self.seed, cfg=self.cfg, arm=self.arm)
        self.mirror = InputMirror(settings)

    def enter(self, mode):
        code = link.HIL_LOCKSTEP if mode == "lockstep" else link.HIL_REALTIME
        r = self.client.request(link.T_HIL_MODE, (code,), timeout=3.0)
        if not r.ok:
            raise HilError("the board refused HIL mode: %s" % refusal(r.code, r.payload, self.client.port))

    def leave(self):
        try:
            return self.client.request(link.T_HIL_MODE, (link.HIL_OFF,), timeout=3.0)
        except LinkError:
            return None

    def run(self, clear_fault=False):
        self.open()
        if clear_fault:
            self.client.request(link.T_CLEAR_FAULT, (), timeout=3.0)   # E_STATE if none: fine
        self.enter(self.mode)
        t0 = time.perf_counter()
        try:
            if self.mode == "lockstep":
                done_at = self._run_lockstep()
            else:
                done_at = self._run_realtime()
        except _Cut as e:
            self.log("the scenario resets the controller (%s): not possible over HIL" % e)
            done_at = None
        finally:
            self.wall_s = time.perf_counter() - t0
            self.leave()
        return self._record(done_at)

    def _finished(self, t, done_at):
        # Over when the board, having started the job (a non-IDLE state seen, or a fault that
        # ended it at once), is back in IDLE. In real time a REPLY can overtake the state.
        if done_at is None and self._started and self._state == states.IDLE:
            done_at = t
        return done_at

    def _run_lockstep(self):
        c = self.client
        p = self.world
        readings = {}
        now, pot, cur, rail, pins = p.step(0, self._pulses)
        done_at = None
        while now < CYCLE_LIMIT_MS:
            if self.job is None and now >= JOB_AT_MS:
                # Read in the board's wait for the next sensor frame: at this tick, every run.
                r = c.request(link.T_JOB, self._job_args(), timeout=3.0)
                self._job_reply = (r.code,) + tuple(r.payload)
                if not r.ok:
                    raise HilError("the board refused the job: %s%s" % (
                        refusal(r.code, r.payload, self.client.port),
                        " (or run again with --clear-fault)" if r.code == link.E_FAULTED else ""))
                self.job["t_ms"] = now
            sid = self._send_sensors(now, pot, cur, rail, pins, readings)
            deadline = time.monotonic() + ACT_TIMEOUT_S
            got = False
            while not got:
                for f in c.read_frames(0.05):
                    if f.ftype == link.T_HIL_ACT:
                        self._act(f, readings)
                        got = got or f.fields[0] == sid
                    else:
                        self._on_frame(f)
                if not got and time.monotonic() > deadline:
                    raise HilError("no HIL_ACT for sensor frame %d within %.1f s" % (sid, ACT_TIMEOUT_S))
            done_at = self._finished(now, done_at)
            if self.progress is not None:
                self.progress(now, self._state)
            if done_at is not None and now - done_at >= JUDGE_TAIL_MS:
                break
            now, pot, cur, rail, pins = p.step(self.period, self._pulses, self._state)
        self._drain(0.2)
        return done_at

    def _job_args(self):
        pick, place, width = self.world.job_um()
        self.job = {"pick_um": list(pick), "place_um": list(place), "part_width_um": width,
                    "max_attempts": self.cfg.max_attempts, "t_ms": None}
        return tuple(pick) + tuple(place) + (width,)

    def _run_realtime(self):
        # A reader thread timestamps every frame as it arrives, so the figures measure the link
        # and the board, not how long this thread was busy stepping the plant.
        c = self.client
        p = self.world
        readings = {}
        inbox = queue.Queue()
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                try:
                    frames = c.read_frames(0.005)
                except LinkError as e:
                    inbox.put((time.perf_counter(), e))
                    return
                t = time.perf_counter()
                for f in frames:
                    inbox.put((t, f))

        th = threading.Thread(target=reader, name="hil-reader", daemon=True)
        th.start()
        try:
            now, pot, cur, rail, pins = p.step(0, self._pulses)
            done_at = None
            period_s = self.period / 1000.0
            next_send = time.perf_counter()
            while now < CYCLE_LIMIT_MS:
                if self.job is None and now >= JOB_AT_MS:
                    self._job_rid = c.new_id()
                    c.send(link.request(link.T_JOB, self._job_rid, self._job_args()))
                    self.job["t_ms"] = now
                self._send_sensors(now, pot, cur, rail, pins, readings)
                next_send += period_s
                while True:         # what the board sent, until it is time for the next frame
                    left = next_send - time.perf_counter()
                    try:
                        t, f = inbox.get(timeout=left) if left > 0 else inbox.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(f, Exception):
                        raise f
                    if f.ftype == link.T_HIL_ACT:
                        self._act(f, readings, t)
                    else:
                        self._on_frame(f)
                if time.perf_counter() - next_send > period_s:
                    self.late_sends += 1        # the host fell behind: skip ahead, never burst
                    next_send = time.perf_counter()
                if self._job_reply and self._job_reply[0] != link.OK:
                    raise HilError("the board refused the job: %s" % refusal(self._job_reply[0], self._job_reply[1:],
                                                                             self.client.port))
                done_at = self._finished(now, done_at)
                if self.progress is not None:
                    self.progress(now, self._state)
                if done_at is not None and now - done_at >= JUDGE_TAIL_MS:
                    break
                now, pot, cur, rail, pins = p.step(self.period, self._pulses, self._state)
        finally:
            stop.set()
            th.join(1.0)
        while not inbox.empty():
            _, f = inbox.get_nowait()
            if not isinstance(f, Exception) and f.ftype != link.T_HIL_ACT:
                self._on_frame(f)
        self._drain(0.2)
        return done_at

    def _drain(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for f in self.client.read_frames(0.05):
                if f.ftype != link.T_HIL_ACT:
                    self._on_frame(f)

    # ---- the cycle's record (sim.runner's fields) ----

    def link_figures(self):
        lat = [v * 1e6 for v in self.latency_s]
        out = {"acts": self.acts, "sensor_frames": self._seq, "wall_s": round(self.wall_s, 3),
               "plant_ms": self.world.now_ms}
        if lat:
            out.update(latency_us_median=round(statistics.median(lat)), latency_us_p99=round(percentile(lat, 99)),
                       latency_us_max=round(max(lat)),
                       jitter_us=round(statistics.pstdev(lat)) if len(lat) > 1 else 0)
        if self.step_us:
            out["board_step_us_median"] = statistics.median(self.step_us)
        if self.board_period_us:
            bp = self.board_period_us
            out.update(board_period_us_median=statistics.median(bp), board_period_us_p99=percentile(bp, 99))
        if self.mode == "realtime":
            out["late_sends"] = self.late_sends
            out["realtime_ratio"] = round(self.world.now_ms / 1000.0 / self.wall_s, 3) if self.wall_s else None
        return out

    def _record(self, done_at):
        evs = self.events
        fsm_outcome, fsm_fault, fault_state = machine_belief(evs, done_at is not None)
        j_out, j_reason, j_details = self.world.verdict()
        answer = "placed" if fsm_outcome == "placed" else (fsm_fault or fsm_outcome)
        return {
            "cycle": 0, "seed": self.seed, "mode": self.mode,
            "fsm_outcome": fsm_outcome, "fsm_fault": fsm_fault,
            "fault_state": fault_state,
            "attempts": max([e[6] for e in evs] or [0]),
            "judge_outcome": j_out, "judge_reason": j_reason, "judge": j_details,
            "outcome": answer,
            "success": fsm_outcome == "placed" and j_out == "placed",
            "sim_ms": self.world.now_ms, "job": self.job,
            "board": {"board_id": self.identity[0] if self.identity else None,
                      "fw_version": self.identity[1] if self.identity and len(self.identity) > 1 else None},
            "link": self.link_figures(),
        }


def record(hil, rec):
    # What the run record (records/runrecord.py, kind "hil") holds: -> (meta, cycles, events,
    # ticks). Tick rows carry what the board's machine read (mirrored through the firmware's
    # drivers), its state and pulses; its commands and arrivals are not on the link (-1).
    from surepick.sim.params import PlantParams
    from surepick.host.engines.summary import versions
    v = versions()
    if rec["board"]["fw_version"]:
        v["firmware"] = rec["board"]["fw_version"]
    meta = {"kind": "hil", "scenario": hil.scenario, "params": hil.world.values, "seed": hil.seed,
            "versions": v, "model_hash": hil.world.plant.model_hash(), "config": hil.cfg.to_dict(),
            "config_source": "read from the board over the link before HIL began",
            "board_settings": dict(hil.settings.board),
            "loop_period_ms": hil.period, "plant_params": PlantParams.from_dict({}).to_dict(),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"command": "surepick hil", "mode": hil.mode, "board": rec["board"],
                       "link": rec["link"]}}
    from surepick.host.arms import files
    meta.update(files.record_fields(hil.arm))
    events = {0: [tuple(e) for e in hil.events]}
    return meta, [rec], events, {0: hil.ticks}
