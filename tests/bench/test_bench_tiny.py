# Every script in bench/ runs in its --tiny mode (a few iterations of every part it measures), so
# none can rot unnoticed: exit 0 and its figures printed. The figures of a tiny run mean nothing;
# the benchmarks' real runs (without --tiny) are what docs/ quotes.
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

BENCH = REPO / "tools" / "bench"
PY, MPY = "python", "micropython"
NUM = r"-?\d+(\.\d+)?"

# (script, interpreter, lines it must print (regular expressions), slow: over ~10 s here)
BENCHES = (
    ("arm_kinematics.py", PY, [r"arm kinematics on the emulated RP2040 \(emulated us, 125 MHz\), 3 calls each",
                               r"^  reference +serial +%s ms +\d+ us +\d+ us" % NUM], True),
    ("cmdfuzz_timing.py", MPY, [r"cmdfuzz_timing: 200 bad lines into the running loop",
                                r"line_tick_us median \d+ p99 \d+ worst \d+ \(200 ticks\)",
                                r"line ticks over 2x the \d+ us period: \d+ of 200 \(first measurement, "
                                r"no forced GC, no retries\)"], False),
    ("compare_bench.py", PY, [r"recorded and wrote 2 x 2 cycles",
                              r"compare 2 vs 2 cycles: load %s s, checks %s s, report %s s" % (NUM, NUM, NUM)], True),
    ("deploy_time.py", PY, [r"deploy to the virtual board \(mpy, \d+ files",
                            r"cold: +%s s median" % NUM, r"cold/cache: +%s s median" % NUM,
                            r"warm: +%s s median" % NUM], True),
    ("frames_parse.py", PY, [r"frames_parse: 500 frames",
                             r"median of 5: %s frames/s, %s MB/s" % (NUM, NUM)], False),
    ("fsm_step.py", PY, [r"CPython \S+ +steps/s median \d+", r"MicroPython \S+ steps/s median \d+",
                         r"total \.mpy: \d+ bytes"], False),
    ("fw_loop.py", MPY, [r"step_us_median +\d+", r"step_us_p99 +\d+", r"alloc_bytes_per_tick_mean +%s" % NUM,
                         r"heap_locked_ticks_ok +\d+", r"link_bytes_per_s_rest +\d+"], False),
    ("handshake_loop.py", PY, [r"^handshake_loop: 3 handshakes, \d+ failed",
                               r"handshake to the raw REPL: median %s s, worst %s s" % (NUM, NUM)], True),
    ("hil_bench.py", PY, [r"lockstep \(TCP\): \{'cycles': 1, 'placed': \d",
                          r"realtime \(pty\): \{'runs': 1, "], True),
    ("monitor_ingest.py", PY, [r"frames: 500,",
                               r"monitor ingest \(parse \+ \w+ \+ SQLite\): %s frames/s" % NUM], False),
    ("night.py", PY, [r"^night: feeder seed 7, 2 cycles asked",
                      r"^cycles 2, placed 2, .*judge: binned 2, lost 0 -> counters match the judge: yes",
                      r"heap free at the cycles' starts: min \d+ B, max \d+ B, drift -?\d+ B",
                      r"^log: \d+ to \d+ B, at most \d+ segments, \d+ rotations",
                      r"wrote night-2\.json and night-2\.md"], True),
    ("rp2040_emu.py", PY, [r"boot to USB enumerated: %s emulated ms" % NUM,
                           r"busy loop +%s host CPU s .* per emulated s" % NUM,
                           r"lockstep: \d+ host us per \d+ ms step"], True),
    ("sigint_heap.py", PY, [r"^sigint_heap: 2 runs of 0\.3 s, 1 helper thread\(s\), SIGINTs every 3 ms",
                            r"^heap locked in \d+, clean in \d+, other ends \d+"], False),
    ("plant_step.py", PY, [r"plant_full_loop +%s steps/s" % NUM, r"ratio_full_vs_bare_loop +%s" % NUM], False),
    ("sweep_bench.py", PY, [r"local pool +1 worker : 2 cycles \(2 placed\) in %s s: %s cycles/s, %s per worker" % (NUM, NUM, NUM),
                            r"dask LocalCluster +2 workers: 2 cycles \(2 placed\) .*cluster start %s s" % NUM,
                            r"dask LocalCluster +1 worker : scheduling overhead %s ms per task" % NUM,
                            r"median scheduling overhead per cycle: %s ms" % NUM], True),
    ("teleop_latency.py", PY, [r"^latency_ms p50 %s p99 %s" % (NUM, NUM), r"processing_ms p50 %s p99 %s" % (NUM, NUM),
                               r"board latency_ms p50 %s p99 %s" % (NUM, NUM),
                               r"board host_ms p50 %s p99 %s" % (NUM, NUM)], False),
    ("chip_tick.py", PY, [r"unix: \d+ ticks, median tick \d+ us", r"chip: \d+ ticks, median tick \d+ us",
                          r"^cycle \(per call, us: mean / p99 / max\)",
                          r"emulation: %s s emulated in %s s host CPU" % (NUM, NUM),
                          r"heap on the chip \(firmware \+ probe\): free after boot \d+ B, at the job's first tick \d+ B"], True),
    ("openbricks_compare.py", PY, [r"^surepick +in the loop +%sx real time, bare mj_step +%sx" % (NUM, NUM),
                                   r"openbricks: not run with --tiny"], False),
    ("physics_cost.py", PY, [r"^this .*: mj_step %s us per simulated ms \(%sx real time\), whole cycle %s us" % (NUM, NUM, NUM),
                             r"load average at end"], False),
    ("physics_options.py", PY, [r"^base +mj_step +%s us per simulated ms \(1\.00x base\); part_missing 1000: " % NUM,
                                r"^pyramidal +mj_step +%s us per simulated ms \(%sx base\); part_missing 1000: " % (NUM, NUM)],
     False),
    ("sim_bench.py", PY, [r"ratio \(target >= 0\.8\): +%s" % NUM, r"one nominal cycle: +%s x real time" % NUM,
                          r"whole tick +%s us" % NUM, r"^per \d+ ms loop tick: +%s us in mj_step" % NUM, r"mixed batch: 2 cycles"], False),
)


# Scripts in bench/ that are not benchmarks themselves: chip_tick.py runs its probe on the board;
# the others are shared by benchmarks (board_stream.py, mj_step_timer.py).
HELPERS = {"chip_tick_probe.py", "board_stream.py", "mj_step_timer.py"}


def test_every_bench_script_has_a_tiny_run_here():
    assert {p.name for p in BENCH.glob("*.py")} - HELPERS == {b[0] for b in BENCHES}


@pytest.mark.parametrize("script,interp,expect", [
    pytest.param(s, i, e, id=s, marks=[pytest.mark.slow] if slow else []) for s, i, e, slow in BENCHES])
def test_bench_runs_tiny(script, interp, expect, tmp_path):
    # MicroPython scripts through tools/mpy_sources.py (the board code importable as on a board).
    exe = [sys.executable, str(REPO / "tools" / "mpy_sources.py")] if interp == MPY else [sys.executable]
    # run from outside the repo, as a user would: nothing written into the working tree
    proc = subprocess.run([*exe, str(BENCH / script), "--tiny"], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    missing = [e for e in expect if not re.search(e, out, re.M)]
    assert not missing, (missing, out[-3000:])
