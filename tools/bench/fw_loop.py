# Firmware main-loop benchmark under the unix `micropython`:
#   python tools/mpy_sources.py tools/bench/fw_loop.py [SCENARIO] [--json] [--tiny]
# (--tiny: 100 ticks at rest and the first 400 of the job, for the tests; the figures are then
# from those ticks and the outcome is "unfinished")
# Runs firmware/app.py's tick (all drivers, the shared machine, the motion planner, the link)
# against the scripted stand-in HAL (firmware/hal/scripted.py) through one full job, and reports
#   - step time per tick (time.ticks_us around App.tick): median, p99, worst, per phase
#   - bytes allocated per tick (gc.mem_alloc deltas with the GC paused), by class of tick:
#     plain (nothing sent), frame (a TELEMETRY/EVENT frame went out), plan (a new move was
#     planned: floats and IK), flash (log commit / marker at rest: excluded from the loop
#     figures, as the loop's own stats do); plus a heap_lock proof over plain ticks at rest
#   - link bytes per second at the default telemetry rate, at rest and during the job
# The figures are for this x86 machine; docs/performance.md says how to read them for a 133 MHz RP2040
# (the board reports its own loop_period_us / worst_step_us / overruns in every TELEMETRY).
import gc
import sys
import time

from surepick.shared_fsm import link, fake_scenarios  # noqa: E402
from surepick.shared_fsm.config import Config  # noqa: E402
from surepick.firmware.hal.scripted import ScriptedHal  # noqa: E402
from surepick.firmware import app as app_mod  # noqa: E402
import micropython  # noqa: E402

SCENARIO = "nominal"
for arg in sys.argv[1:]:
    if not arg.startswith("--"):
        SCENARIO = arg
AS_JSON = "--json" in sys.argv
TINY = "--tiny" in sys.argv
REST_TICKS = 100 if TINY else 2500     # 5 s at rest before the job (telemetry only)
JOB_TICKS = 400 if TINY else 60000     # at most this many ticks of the job


def tmpdir():
    import os
    d = "/tmp/surepick_fw_bench_%d" % (time.ticks_us() & 0xFFFFFF)
    os.mkdir(d)
    return d


def percentile(sorted_vals, p):
    if not sorted_vals:
        return 0
    i = (len(sorted_vals) - 1) * p // 100
    return sorted_vals[i]


CLASSES = ("plain", "frame", "plan", "flash")


def main():
    spec = fake_scenarios.find(SCENARIO)
    flash = tmpdir()
    hal = ScriptedHal(Config(spec[2]), spec[1])
    a = app_mod.App(hal, root=flash)
    hal.out = a.m.out
    a.boot()
    period = a.cfg.loop_period_ms
    # per class of tick: step times and allocation
    steps = {}
    allocs = {}
    for c in CLASSES:
        steps[c] = []
        allocs[c] = []
    locked_ok = 0
    locked_fail = 0
    rest_tx0 = a.tx_bytes
    rest_t0 = hal.now
    rest_bytes = 0
    rest_ms = 0
    job_tx0 = 0
    job_t0 = 0
    job_started = 0
    ticks = 0
    gc.collect()
    gc.disable()
    while ticks < 60000:
        if ticks == REST_TICKS:
            rest_bytes = a.tx_bytes - rest_tx0
            rest_ms = hal.ticks_diff(hal.now, rest_t0)
            hal.send(link.job(1, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
            job_tx0 = a.tx_bytes
            job_t0 = hal.now
            job_started = 1
        now = hal.ticks_ms()
        if ticks < REST_TICKS and ticks % 2 == 1 and not a.flash_tick \
                and hal.ticks_diff(a.next_telemetry, now) > 0 and not a.tel.sends():
            # at rest, a tick with nothing to send: proof that it allocates nothing at all
            micropython.heap_lock()
            try:
                a.tick(now)
                locked_ok += 1
            except MemoryError:
                locked_fail += 1
            micropython.heap_unlock()
        else:
            tx0 = a.tx_bytes
            seq0 = a.m.out.move_seq
            m0 = gc.mem_alloc()
            t0 = time.ticks_us()
            a.tick(now)
            t1 = time.ticks_us()
            d = gc.mem_alloc() - m0
            if a.flash_tick:
                c = "flash"
            elif a.m.out.move_seq != seq0:
                c = "plan"
            elif a.tx_bytes != tx0:
                c = "frame"
            else:
                c = "plain"
            steps[c].append(time.ticks_diff(t1, t0))
            allocs[c].append(d)
        ticks += 1
        hal._advance(period)
        if gc.mem_free() < 200000:
            gc.collect()
        if job_started and not a.busy() and a.ev_sent > 0 and (not a.cycle_open or a.pose_saved) and \
                hal.ticks_diff(hal.now, job_t0) > 1000:
            break
        if ticks >= REST_TICKS + JOB_TICKS:
            break
    gc.enable()
    job_bytes = a.tx_bytes - job_tx0
    job_ms = hal.ticks_diff(hal.now, job_t0)
    all_steps = []
    all_alloc = 0
    n_alloc = 0
    for c in ("plain", "frame", "plan"):
        all_steps.extend(steps[c])
        all_alloc += sum(allocs[c])
        n_alloc += len(allocs[c])
    s = sorted(all_steps)
    res = {
        "scenario": SCENARIO,
        "outcome": "placed" if a.m.outcome == 10 else ("fault %d" % a.m.fault if a.m.fault else "unfinished"),
        "ticks_timed": len(s),
        "step_us_median": percentile(s, 50),
        "step_us_p99": percentile(s, 99),
        "step_us_worst": s[-1] if s else 0,
        "alloc_bytes_per_tick_mean": (all_alloc * 100 // n_alloc) / 100 if n_alloc else 0,
        "heap_locked_ticks_ok": locked_ok,
        "heap_locked_ticks_failed": locked_fail,
        "link_bytes_per_s_rest": rest_bytes * 1000 // rest_ms if rest_ms else 0,
        "link_bytes_per_s_job": job_bytes * 1000 // job_ms if job_ms else 0,
        "telemetry_hz": a.settings.board["telemetry_hz"],
        "loop_period_ms": period,
        "virtual_job_ms": job_ms,
    }
    for c in CLASSES:
        ss = sorted(steps[c])
        res["ticks_" + c] = len(ss)
        res["step_us_median_" + c] = percentile(ss, 50)
        res["step_us_worst_" + c] = ss[-1] if ss else 0
        res["alloc_bytes_mean_" + c] = sum(allocs[c]) // len(allocs[c]) if allocs[c] else 0
        res["alloc_bytes_worst_" + c] = max(allocs[c]) if allocs[c] else 0
    if AS_JSON:
        import json
        print(json.dumps(res))
    else:
        for k in sorted(res):
            print("%-28s %s" % (k, res[k]))
    import os
    for name in os.listdir(flash + "/log"):
        os.remove(flash + "/log/" + name)
    os.rmdir(flash + "/log")
    for name in os.listdir(flash):
        os.remove(flash + "/" + name)
    os.rmdir(flash)


main()
