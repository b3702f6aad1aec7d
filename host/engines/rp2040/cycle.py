# A scenario's cycles run by the FIRMWARE on the EMULATED RP2040 (the real MicroPython RP2040
# image in rp2040js, the firmware installed from a flash image built like a deploy) wired to a
# sim.world.World in lockstep emulated time (wiring.py), written as a run record of kind
# `rp2040` (records/runrecord.py): the same directory `surepick sim run` writes.
#
# Each cycle is one fresh chip (power-on, an erased flash but for the firmware) and one fresh
# world for the scenario, seed and cycle. The host plays the operator over the chip's USB serial
# as the other engines do: CALIBRATE current in the tick 38 ms after the firmware's first loop
# tick (the in-process engine's boot ends at 62 ms and it calibrates at 100 ms), the scenario's
# JOB as soon as the calibration's REPLY came; then it lets the world run JUDGE_TAIL_MS past the
# end of the cycle. Time on the chip is emulated time: what the firmware's loop measures is
# what a Pico at 125 MHz would measure (../shared/rp2040/README.md: within about 10-20%).
#
# Where each file of the record comes from:
#   events.csv    the firmware's EVENT frames
#   cycles.jsonl  the outcome from those frames, the judge from the world; `loop` from the
#                 firmware's last TELEMETRY frame (its own figures for the cycle window)
#   ticks.csv     rebuilt by engines/vboard.py's shadow controller from the readings the
#                 firmware took (readings.py: the ADC conversions the engine saw and the pin
#                 levels it drove) and checked against the pulses the PWM slices showed and the
#                 firmware's events; loop_us is the time between the starts of two ticks' reads
#                 on the emulated clock (the ADC seen as a logic analyser sees it)
import tempfile
import time
from pathlib import Path

from surepick.host.engines import vboard
from surepick.host.engines.rp2040 import flashimage
from surepick.host.engines.rp2040.chip import Chip
from surepick.host.engines.rp2040.readings import exchange_log
from surepick.host.engines.rp2040.wiring import WiredChip
from surepick.firmware import settings as fw_settings
from surepick.shared_fsm import codes, link, states
from surepick.shared_fsm.config import Config
from surepick.sim.world import CAL_AT_MS, CYCLE_LIMIT_MS, JUDGE_TAIL_MS, World
from surepick.host.user_error import Failure

SOURCE_COMMAND = "surepick sim run --engine rp2040"
KIND = "rp2040"
BOOT_LIMIT_MS = 5000          # emulated: power-on to the firmware's first loop tick
PULSE_RESOLUTION_US = 1       # a pulse read back from a PWM slice, against the us the firmware set
HOST_BOOT_END_MS = 62         # the in-process engine at 2 ms: boot sense over, first tick
class ChipRunError(Failure, RuntimeError):
    pass


def image(workdir, settings=None, arm=None):
    """The firmware flash image (built once per run, reused by every cycle), with /config.json
    when the settings differ from the defaults and /arm.json when the arm is not the reference
    (as deploy --arm ships it)."""
    import json
    path = Path(workdir) / "firmware-flash.bin"
    if not path.exists():
        d = settings.to_json_dict() if settings is not None else {}
        extra = {"/config.json": json.dumps(d).encode()} if d.get("board") or d.get("machine") else {}
        if arm is not None:
            from surepick.host.arms import files
            extra["/arm.json"] = files.compact_json(arm).encode()
        flashimage.build(path, extra=extra or None)
    return path


def _reply_to(rid):
    return lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid


def _cycle_end(f):
    return f.ftype == link.T_EVENT and (f.fields[2] == codes.K_FAULT
                                        or (f.fields[4] == states.IDLE and f.fields[3] != states.IDLE))


class ChipCycle:
    """One cycle on a fresh emulated chip. After run(): events, frames, log (the exchange log
    for the shadow), reads, requests, job, ended_at, wall_s, emulation (the engine's stats)."""

    def __init__(self, scenario, values, seed, cycle, plant_params=None, flash_image=None, uf2=None,
                 log=None, cal_after_ms=None, stop_after_job_ms=None, settings=None, arm=None, request=None):
        self.scenario = scenario
        # request(world) -> (the request line with req_id 2, predicate of the frame that ends it,
        # its limit in emulated ms): sent instead of the scenario's JOB (a production run's RUN)
        self.request = request
        self.arm = arm                # the chip's /arm.json (the flash image's) and the world's; None: reference
        self.values = values
        self.seed = int(seed)
        self.cycle = int(cycle)
        self.plant_params = plant_params
        self.flash_image = flash_image
        self.uf2 = uf2
        self.say = log or (lambda s: None)
        self.settings = settings or fw_settings.Settings()   # what the chip's /config.json says
        if cal_after_ms is None:
            # the in-process engine's first tick comes after boot_sense_ms // period + 1 reads
            cal_after_ms = CAL_AT_MS - vboard.first_tick_ms(self.settings)
        self.cal_after_ms = cal_after_ms              # CALIBRATE this long after the first tick
        self.stop_after_job_ms = stop_after_job_ms    # benches: stop early instead of at the end
        self.console = bytearray()                    # everything the chip sent that was not a frame
        self.ended_at = None
        self.events = []

    def _find(self, pred, since=0):
        for f in self.cw.frames[since:]:
            if pred(f):
                return f
        return None

    def _until(self, pred, max_ms, what, serial=None):
        cw = self.cw
        seen = [len(cw.frames)]

        def hit():
            f = self._find(pred, seen[0])
            seen[0] = len(cw.frames)
            if f is not None:
                found.append(f)
                return True
            return False
        found = []
        if not cw.run_until(hit, max_ms, serial):
            raise ChipRunError("%s did not happen within %d emulated ms (t=%.0f ms); chip said: %s"
                               % (what, max_ms, cw.t_us / 1000.0, self.text[-600:].decode("utf-8", "replace")))
        return found[0]

    def _text(self, b):
        self.text = (self.text + b)[-4000:]
        self.console += b

    def run(self):
        self.text = b""
        world = World(self.scenario, self.values, self.seed, self.cycle, self.plant_params, cfg=self.settings.cfg,
                      arm=self.arm)
        self.ps = world                       # vboard's record helpers read the judge through it
        settings = self.settings
        period = settings.cfg.loop_period_ms
        n_boot = settings.board["boot_sense_ms"] // period + 1
        t0 = time.monotonic()
        chip = Chip(self.uf2, flash=self.flash_image, lockstep=True, flash_timing=True)
        chip.start(wait_usb=False)
        try:
            cw = WiredChip(chip, world, settings, record=True, on_text=self._text, arm=self.arm)
            self.cw = cw
            # 1. Boot: HELLO, then the first loop tick (the read after the boot sense's).
            self._until(lambda f: f.ftype == link.T_HELLO, BOOT_LIMIT_MS, "the firmware's HELLO")
            if not cw.run_until(lambda: self._reads() > n_boot, 200):
                raise ChipRunError("the firmware sent HELLO but its loop never read its inputs")
            first_tick_us = self._first_tick_us(n_boot)
            # 2. CALIBRATE current, delivered as the tick (first + 38 ms) begins.
            cal_at_us = first_tick_us + self.cal_after_ms * 1000
            while cw.t_us + 500 < cal_at_us:
                cw.step()
            cal_line = link.request(link.T_CALIBRATE, 1, (link.CAL_CURRENT,))
            self.cal_sent_us = cw.t_us
            r = self._until(_reply_to(1), 3000, "the reply to CALIBRATE current", serial=cal_line)
            if r.fields[1] != link.OK:
                raise ChipRunError("CALIBRATE current was refused: %r" % (r.fields,))
            # 3. The scenario's JOB (or the request given).
            pick, place, width = world.job_um()
            self.job = (pick, place, width)
            line, ends, limit_ms = (link.job(2, pick, place, width), _cycle_end, CYCLE_LIMIT_MS)
            if self.request is not None:
                line, ends, limit_ms = self.request(world)
            r = self._until(_reply_to(2), 3000, "the reply to %s" % link.SCHEMA[line[4]][0], serial=line)
            if r.fields[1] != link.OK:
                raise ChipRunError("the scenario's %s was refused: %r" % (link.SCHEMA[line[4]][0], r.fields))
            # 4. The cycle, then JUDGE_TAIL_MS of the world past its end.
            if self.stop_after_job_ms is not None:
                cw.run_until(lambda: False, self.stop_after_job_ms)
                self.emulation = chip.stats()
                return self
            end = self._until(ends, limit_ms, "the end of the cycle")
            self.ended_at = end.fields[1]
            tail_end = cw.t_us + (period + JUDGE_TAIL_MS) * 1000
            while cw.t_us < tail_end:
                cw.step()
            self.emulation = chip.stats()
        finally:
            chip.close()
        self.wall_s = time.monotonic() - t0
        self.frames = cw.frames
        self.events = [tuple(f.fields) for f in cw.frames if f.ftype == link.T_EVENT]
        self.log, self.reads = exchange_log(cw.windows, cw.conversions, settings.pins())
        self.requests = (("calibrate", self._handled_after(self.cal_sent_us, len(cal_line), settings)),
                         ("job", self._job_tick()))
        return self

    # ---- what the engine saw ----

    def _reads(self):
        from surepick.host.engines.rp2040.readings import reads
        return len(reads(self.cw.windows, self.cw.conversions, self.cw.pins))

    def _first_tick_us(self, n_boot):
        from surepick.host.engines.rp2040.readings import reads
        return reads(self.cw.windows, self.cw.conversions, self.cw.pins)[n_boot].t_us

    def _handled_after(self, sent_us, nbytes, settings):
        # The tick that read the last byte of a line delivered at sent_us: the firmware reads
        # link_rx_bytes of a request per tick.
        per = settings.board["link_rx_bytes"]
        ticks = [e for e in self.log if e[8] * 1000 >= sent_us - 999]
        k = (nbytes + per - 1) // per - 1
        return ticks[k][8] if len(ticks) > k else None

    def _job_tick(self):
        # start_job() is called after the tick's step; the machine leaves IDLE in the next
        # step, whose time its APPROACH event carries: the job's tick is the read before it.
        first = next((e for e in self.events if e[2] == codes.K_TRANSITION and e[3] == states.IDLE), None)
        if first is None:
            return None
        times = [e[8] for e in self.log]
        for i, t in enumerate(times):
            if t == first[1] and i > 0:
                return times[i - 1]
        return None


def run_cycle(scenario, values, seed, cycle, plant_params=None, workdir=None, allow_mismatch=False,
              uf2=None, log=None, cfg_overrides=None, arm=None):
    """One cycle on a fresh emulated chip -> (cycle record, events, tick rows, ChipCycle).
    cfg_overrides: machine config the chip gets in its /config.json (e.g. loop_period_ms)."""
    settings = fw_settings.Settings(machine=cfg_overrides)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="surepick-rp2040-")
        workdir = tmp.name
    try:
        cc = ChipCycle(scenario, values, seed, cycle, plant_params, image(workdir, settings, arm), uf2, log,
                       settings=settings, arm=arm)
        cc.run()
    finally:
        if tmp is not None:
            tmp.cleanup()
    # The pulses come back from the PWM slices' registers: the firmware's whole-us width to the
    # slice's resolution (a count is 0.3 us at 50 Hz), so within 1 us of what it wrote.
    shadow = vboard.reconstruct(cc, settings, pulse_tol=PULSE_RESOLUTION_US)
    _add_loop_us(shadow["ticks"], cc)
    fw_events = [vboard._event_key(e) for e in cc.events]
    sh_events = [vboard._event_key(e) for e in shadow["events"]]
    events_equal = sh_events == fw_events
    check = {"pulse_mismatches": shadow["pulse_mismatches"], "events_equal": events_equal,
             "pulse_tolerance_us": PULSE_RESOLUTION_US,
             "state_byte_mismatches": shadow["state_byte_mismatches"],
             "ticks": len(shadow["ticks"]), "exchanges": len(cc.log)}
    if not allow_mismatch and (shadow["pulse_mismatches"] or not events_equal):
        raise vboard.ReconstructionError(
            "cycle %d: the shadow controller did not reproduce the firmware on the chip (pulse mismatches %d, "
            "events equal %s); first: %r; firmware events %r, shadow %r"
            % (cycle, shadow["pulse_mismatches"], events_equal,
               [m for m in shadow["mismatches"] if m[1] == "pulses"][:3], fw_events, sh_events))
    rec = vboard._cycle_record(cc, shadow, check)
    st = cc.emulation
    rec["emulation"] = {"emulated_s": round(st["emulated_s"], 3), "host_cpu_s": round(st["host_cpu_s"], 2),
                        "host_wall_s": round(st["host_wall_s"], 2),
                        "host_cpu_s_per_emulated_s": round(st["host_cpu_s"] / max(st["emulated_s"], 1e-9), 2),
                        "flash_busy_ms": round(st["flash"]["busyNs"] / 1e6, 1)}
    return rec, list(cc.events), shadow["ticks"], cc


def _add_loop_us(rows, cc):
    # loop_us: from the start of the previous tick's read to this one's, emulated us.
    start = {}
    for e, r in zip(cc.log, cc.reads):
        start[e[8]] = r.t_us
    prev = None
    for row in rows:
        t = start.get(row[1])
        row[-1] = -1 if t is None or prev is None else int(round(t - prev))
        prev = t


def run(scenario, seed=0, cycles=1, overrides=None, plant_params=None, workdir=None, allow_mismatch=False,
        uf2=None, log=None, cfg_overrides=None, arm=None):
    """`cycles` cycles of a scenario on the emulated chip -> (run.json meta, cycle records,
    events, ticks) for records/runrecord.py write."""
    from surepick.host.engines.summary import versions
    from surepick.sim import scenarios
    from surepick.sim.params import PlantParams
    from surepick.host.engines.rp2040.chip import find_uf2
    uf2 = find_uf2(uf2)
    sc = scenarios.get(scenario)
    values = sc.resolve(overrides)
    if plant_params is not None:
        plant_params = PlantParams.from_dict(plant_params).to_dict()
    say = log or (lambda s: None)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="surepick-rp2040-")
        workdir = tmp.name
    recs, events, ticks = [], {}, {}
    model_hash = None
    try:
        for k in range(cycles):
            rec, ev, rows, cc = run_cycle(sc.name, values, seed, k, plant_params, workdir, allow_mismatch, uf2,
                                          cfg_overrides=cfg_overrides, arm=arm)
            model_hash = model_hash or cc.ps.plant.model_hash()
            recs.append(rec)
            events[k] = ev
            ticks[k] = rows
            lp = rec["loop"] or {}
            say("cycle %d: firmware %s%s, judge %s (%s), attempts %d; loop on the chip: median %s us, p99 %s us, "
                "max %s us, overruns %s, longest GC %s us; %.1f s emulated in %.0f s"
                % (k, rec["fsm_outcome"], (" " + rec["fsm_fault"]) if rec["fsm_fault"] else "",
                   rec["judge_outcome"], rec["judge_reason"], rec["attempts"], lp.get("tick_median_us"),
                   lp.get("tick_p99_us"), lp.get("tick_max_us"), lp.get("overruns"), lp.get("gc_max_us"),
                   rec["emulation"]["emulated_s"], rec["wall_s"]))
    finally:
        if tmp is not None:
            tmp.cleanup()
    cfg = Config(cfg_overrides).to_dict()
    v = versions()
    v["firmware"] = vboard.firmware_version()
    v["micropython_image"] = str(uf2)
    meta = {"kind": KIND, "scenario": sc.name, "params": values, "seed": int(seed), "versions": v,
            "model_hash": model_hash, "config": cfg, "loop_period_ms": cfg["loop_period_ms"],
            "plant_params": PlantParams.from_dict(plant_params or {}).to_dict(),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": {"command": SOURCE_COMMAND,
                       "engine": "firmware (compiled .mpy, hal/rp2040.py) on the MicroPython RP2040 image in rp2040js "
                       "(engines/rp2040), pins wired to sim.world.World in lockstep emulated time",
                       "ticks": "inputs, commands and state reconstructed by a shadow controller from the readings the "
                       "firmware took (ADC conversions seen by the engine, pin levels it drove); pulses are the "
                       "PWM slices'; loop_us is the emulated time between two ticks' reads",
                       "reconstruction": {"pulse_mismatches": sum(r["reconstruction"]["pulse_mismatches"] for r in recs),
                                          "events_equal": all(r["reconstruction"]["events_equal"] for r in recs)}}}
    if arm is not None:
        meta["arm"] = arm.name
    return meta, recs, events, ticks


def write_report(out_dir, meta, recs, events):
    """report.json for an rp2040 run: the run's metadata, a summary and every cycle with its
    events and the firmware's `loop` figures (as `surepick sim run` writes it)."""
    import json
    import os
    from surepick.host.engines.inproc import event_dict
    from surepick.host.engines.summary import summarise
    cycles = []
    for r in recs:
        c = dict(r)
        c["scenario"] = meta["scenario"]
        c["events"] = [event_dict(e) for e in events.get(r["cycle"], [])]
        c.setdefault("agree", (r["fsm_outcome"] == "placed") == (r["judge_outcome"] == "placed"))
        c.setdefault("false_success", r["fsm_outcome"] == "placed" and r["judge_outcome"] != "placed")
        c.setdefault("false_failure", r["fsm_outcome"] != "placed" and r["judge_outcome"] == "placed")
        cycles.append(c)
    report = dict(meta)
    report["engine"] = KIND
    report["summary"] = summarise(cycles)
    report["cycles"] = cycles
    path = os.path.join(out_dir, "report.json")
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(path + ".tmp", path)
    return path
