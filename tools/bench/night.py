# A simulated night (issue 22, docs/production-run.md "A night on the bench"): an N-cycle feeder
# run on the virtual board (the deployed firmware under the unix micropython, the MuJoCo plant),
# sent as tests/host/cli/test_production_feeder.py sends its long night: one RUN, read at a held
# point of virtual time, then the host only listens. Sampled every K cycles: the board's free heap
# (the heap probe main.py the emulated-chip run uses, engines/rp2040/heap.py's RUN_MAIN: collected,
# at every cycle's start), the flash log's size and rotations (its segment files), the run's
# counters (the board's RUN_CYCLE/RUN_SKIP records and its TELEMETRY). At the end the morning
# report, RUN_STATUS and the judge (the feeder's count of parts at rest in the bin, parts lost).
#
#   .venv/bin/python tools/bench/night.py [--count 2000] [--seed 7] [--every K] [--out DIR] [--tiny]
#
# Writes night-<count>.json and night-<count>.md into --out (default: the current directory).
# --tiny: 2 cycles sampled every cycle (for tests/bench/test_bench_tiny.py).
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from surepick.firmware.flashlog import GEN_MOD
from surepick.host import production
from surepick.host.engines.rp2040 import heap
from surepick.host.engines.vboard import install_firmware
from surepick.host.engines.vboard_world import board_in_world
from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.host.link.frames import as_dict
from surepick.host.monitor.names import reset_cause_name
from surepick.shared_fsm import codes, link, run_codes
from surepick.shared_fsm.ticks import ticks_diff

RUN_AT_MS = 4000        # the RUN is read at this virtual time (the plant holds there for it)
READY_MS = 500          # part-ready `check` every 500 ms, as the feeder tests and the chip run
_X, _Y, _Z, _VALUE = 7, 8, 9, 11


def log_files(flash):
    # -> (bytes, segment files, oldest generation, newest generation) of the board's flash log
    d = Path(flash) / "log"
    segs = sorted(p for p in d.glob("seg*.log")) if d.is_dir() else []
    gens = sorted(int(p.stem[3:]) for p in segs)
    return (sum(p.stat().st_size for p in segs), len(segs), gens[0] if gens else None, gens[-1] if gens else None)


class Night:
    def __init__(self, flash, count, every):
        self.flash = flash
        self.count = count
        self.every = every
        self.text = []              # the heap probe's lines (the console's other text is dropped)
        self._partial = ""
        self.start_t = None         # RUN_START's board time
        self.cycles = []            # (cycle, board t_ms, cycle ms, outcome, wall s)
        self.skipped = 0
        self.stop = None
        self.restart = None         # a HELLO during the run: the board restarted (the run is over)
        self.telemetry = None
        self.samples = []
        self.wall0 = None
        self.log_at_start = None

    def on_text(self, data):
        s = self._partial + data.decode("utf-8", "replace")
        lines = s.split("\n")
        self._partial = lines.pop()
        self.text += [x for x in lines if heap.MARK in x or "max free sz" in x]

    def on_frame(self, f):
        if f.ftype == link.T_HELLO and self.start_t is not None:
            self.restart = as_dict(f)
            return
        if f.ftype == link.T_TELEMETRY:
            self.telemetry = as_dict(f)
            return
        if f.ftype != link.T_EVENT or f.fields[2] != codes.K_RUN:
            return
        e, r = f.fields, f.fields[5]
        if r == run_codes.R_RUN_START:
            self.start_t = e[1]
            self.log_at_start = log_files(self.flash)
            self.sample(0, e[1])
        elif r == run_codes.R_RUN_CYCLE:
            self.cycles.append((e[_X], e[1], e[_Z], e[_VALUE], time.monotonic() - self.wall0))
            if e[_X] % self.every == 0:
                self.sample(e[_X], e[1])
        elif r == run_codes.R_RUN_SKIP:
            self.skipped += 1
        elif r == run_codes.R_RUN_STOP:
            self.stop = (e[_X], e[_Y], e[_Z], e[_VALUE])
            if not self.samples or self.samples[-1]["cycle"] != e[_X]:
                self.sample(e[_X], e[1])

    def sample(self, cycle, t_ms):
        figs = heap.parse_run("\n".join(self.text))
        latest = max((int(k[5:]) for k in figs if k.startswith("cycle")), default=0)
        h = figs.get("cycle%d" % latest) or figs.get("run") or {}
        size, segs, old, new = log_files(self.flash)
        placed = sum(1 for c in self.cycles if c[3] == codes.R_PLACED)
        t = self.telemetry or {}
        self.samples.append({
            "cycle": cycle, "board_ms": ticks_diff(t_ms, self.start_t) if self.start_t is not None else None,
            "wall_s": round(time.monotonic() - self.wall0, 2),
            "heap_at": "cycle%d" % latest if latest else ("run" if h else None),
            "heap_free": h.get("free"),
            "heap_max_block_gc_blocks": h["max_free_block"] // heap.BLOCK if "max_free_block" in h else None,
            "log_bytes": size, "log_segments": segs, "log_oldest_gen": old, "log_newest_gen": new,
            "placed": placed, "faulted": len(self.cycles) - placed, "skipped": self.skipped,
            "telemetry_cycles_ok": t.get("cycles_ok"), "telemetry_cycles_failed": t.get("cycles_failed"),
            "telemetry_faults_total": t.get("faults_total"), "overruns": t.get("overruns")})
        x = self.samples[-1]    # progress, a line a sample: a long night says how far it is
        print("night: cycle %d of %d, placed %d, heap free %s B, log %d B, %.0f s" % (
            cycle, self.count, placed, _n(x["heap_free"]), size, x["wall_s"]), file=sys.stderr, flush=True)


def run_night(count, seed, every, wall_s):
    flash = tempfile.mkdtemp(prefix="surepick-night-")
    try:
        install_firmware(flash)
        Path(flash, "main.py").write_text(heap.RUN_MAIN)   # the heap probe (it runs the firmware's app.main)
        board = board_in_world(flash, "feeder", seed)
        ps = board.world_service
        feeder = ps.world.feeder
        ps.hold_for_line_at(RUN_AT_MS)
        pick, place, width = ps.job_um()
        fields = production.run_args(count, (pick, place, width, 1), ready=(run_codes.READY_CHECK, READY_MS))
        n = Night(flash, count, every)
        with board:
            a = board.address
            port = a if isinstance(a, str) else "socket://%s:%d" % tuple(a)
            end = time.monotonic() + 120
            while not (ps.holding.is_set() and ps.now_ms >= RUN_AT_MS):
                if time.monotonic() > end:
                    raise SystemExit("virtual time never reached the run's hold")
                ps.wait_holding(0.05)
            c = LinkClient(port, on_frame=n.on_frame, on_text=n.on_text, hub=hub_client.DIRECT,
                           name="night bench").open()
            try:
                n.wall0 = time.monotonic()
                r = c.request(link.T_RUN, fields, 5.0)
                if not r.ok:
                    raise SystemExit("the board refused the RUN: %s %s" % (r.code_name, list(r.payload)))
                end = n.wall0 + wall_s
                while n.stop is None and n.restart is None and time.monotonic() < end:
                    c.pump(0.2)
                if n.restart is not None:     # after a reset a run does not resume: loudly over
                    raise SystemExit("the board restarted after cycle %d (reset cause %s): the night "
                                     "ended there; `surepick job status` on the board says why"
                                     % (len(n.cycles), reset_cause_name(n.restart["reset_cause"])))
                if n.stop is None:
                    raise SystemExit("the night did not end within %.0f s (cycle %d)" % (wall_s, len(n.cycles)))
                wall = time.monotonic() - n.wall0
                end = time.monotonic() + 120
                while feeder.binned < n.stop[1] and time.monotonic() < end:
                    c.pump(0.2)       # the last part placed comes to rest in the bin
                rep, end = None, time.monotonic() + 120
                while (rep is None or rep["stop"] is None) and time.monotonic() < end:
                    rep = production.report(production.read_log(c)[0])   # the STOP record reaches flash at rest
                    c.pump(0.2)
                st = c.request(link.T_RUN_STATUS, (), 3.0)
            finally:
                c.close()
            with ps.lock:
                judge = {"binned": feeder.binned, "lost": [name for name, _ in feeder.lost()],
                         "missed": feeder.missed, "delivered": feeder.delivered}
        n.text.append(n._partial)
        return summarise(n, rep, list(st.payload) if st.ok else None, judge, wall, count, seed, every)
    finally:
        shutil.rmtree(flash, ignore_errors=True)


def summarise(n, rep, status, judge, wall, count, seed, every):
    figs = heap.parse_run("\n".join(n.text))
    starts = [figs["cycle%d" % k] for k in range(1, len(n.cycles) + 1) if "cycle%d" % k in figs]
    free = [h["free"] for h in starts]
    # mem_info's largest free block in GC blocks (heap.parse counts 16 B ones, the chip's; the unix
    # port's are 4 machine words: 32 B on a 64-bit host)
    blocks = [h["max_free_block"] // heap.BLOCK for h in starts if "max_free_block" in h]
    placed = sum(1 for c in n.cycles if c[3] == codes.R_PLACED)
    walls = [b[4] - a[4] for a, b in zip(n.cycles, n.cycles[1:])]
    board_ms = [ticks_diff(b[1], a[1]) for a, b in zip([(0, n.start_t)] + n.cycles, n.cycles)]
    segs = [s["log_segments"] for s in n.samples]
    # TELEMETRY's overrun count is since boot: the run's are the last sample's less the first's
    overruns = [s["overruns"] for s in n.samples if s["overruns"] is not None]
    logb = [s["log_bytes"] for s in n.samples]
    first_gen = n.log_at_start[2] if n.log_at_start else None
    last_gen = n.samples[-1]["log_oldest_gen"] if n.samples else None
    rotations = (last_gen - first_gen) % GEN_MOD if first_gen is not None and last_gen is not None else None
    cycles = n.stop[0]
    # the counters match the judge: the board's records as they came, its STOP record, RUN_STATUS
    # and the morning report (from its flash log) all say what the feeder counted in the bin
    match = (rep is not None and status is not None and judge["lost"] == []
             and rep["cycles"] == cycles == status[1] and rep["placed"] == placed == n.stop[1] == status[3]
             and placed == judge["binned"] and (rep["partial"] or sum(rep["faults"].values()) == cycles - placed))
    return {
        "what": "feeder night on the virtual board", "count": count, "seed": seed, "sample_every": every,
        "cycles": cycles, "placed": placed, "faulted": cycles - placed, "skipped": n.skipped,
        "stop": run_codes.STOP_NAMES[n.stop[2]] if n.stop[2] < len(run_codes.STOP_NAMES) else n.stop[2],
        "report": rep, "run_status": status, "judge": judge, "counters_match_judge": bool(match),
        "cycle_ms_median": rep["cycle_ms_median"] if rep else None, "cycle_ms_p95": rep["cycle_ms_p95"] if rep else None,
        "board_ms_per_cycle_median": statistics.median(board_ms) if board_ms else None,
        "wall_s": round(wall, 1), "wall_s_per_cycle": round(wall / cycles, 2) if cycles else None,
        "wall_s_per_cycle_median": round(statistics.median(walls), 2) if walls else None,
        "heap": {"at": "each cycle's start, collected (the RUN_MAIN probe)", "cycles": len(free),
                 "run": figs.get("run", {}).get("free"),
                 "end": figs.get("end", {}).get("free"),
                 "free_min": min(free) if free else None, "free_max": max(free) if free else None,
                 "drift": free[-1] - free[0] if free else None,
                 "max_block_min_gc_blocks": min(blocks) if blocks else None,
                 "max_block_max_gc_blocks": max(blocks) if blocks else None},
        "log": {"bytes_min": min(logb) if logb else None, "bytes_max": max(logb) if logb else None,
                "segments_max": max(segs) if segs else None, "rotations": rotations,
                "report_from_cycle": rep["from_cycle"] if rep else None},
        "overruns_during_run": overruns[-1] - overruns[0] if overruns else None,
        "samples": n.samples,
    }


def lines(s):
    h, lg = s["heap"], s["log"]
    faults = ", ".join("%s %d" % kv for kv in sorted((s["report"] or {}).get("faults", {}).items())) or "none"
    return [
        "night: feeder seed %d, %d cycles asked, on the virtual board (firmware under micropython, MuJoCo plant)"
        % (s["seed"], s["count"]),
        "cycles %d, placed %d, faults %s, skipped %d, stop %s; judge: binned %d, lost %d -> counters match the judge: %s"
        % (s["cycles"], s["placed"], faults, s["skipped"], s["stop"], s["judge"]["binned"], len(s["judge"]["lost"]),
           "yes" if s["counters_match_judge"] else "NO"),
        "cycle time (board, placed cycles): median %s ms, p95 %s ms; board ms per cycle (with the part-ready waits) "
        "median %s" % (_n(s["cycle_ms_median"]), _n(s["cycle_ms_p95"]), _n(s["board_ms_per_cycle_median"])),
        "wall (this host): %.1f s, %.2f s per cycle (median %s s)" % (s["wall_s"], s["wall_s_per_cycle"] or 0,
                                                                      s["wall_s_per_cycle_median"]),
        "heap free at the cycles' starts: min %s B, max %s B, drift %s B (last vs first); largest free block min %s GC blocks"
        % (_n(h["free_min"]), _n(h["free_max"]), _n(h["drift"]), _n(h["max_block_min_gc_blocks"])),
        "log: %s to %s B, at most %s segments, %s rotations; overruns during the run: %s"
        % (_n(lg["bytes_min"]), _n(lg["bytes_max"]), lg["segments_max"], lg["rotations"], s["overruns_during_run"]),
    ]


def _n(v):
    return "-" if v is None else "%d" % v if isinstance(v, int) or float(v).is_integer() else "%.1f" % v


def markdown(s):
    out = ["# Night bench: %d feeder cycles (seed %d)" % (s["count"], s["seed"]), ""]
    out += ["- " + x for x in lines(s)[1:]]
    out += ["", "| cycle | board s | wall s | heap free B | largest free block (GC blocks) | log B | segments | placed | faulted "
            "| skipped |", "| " + " | ".join(["---"] * 10) + " |"]
    for x in s["samples"]:
        out.append("| %d | %s | %s | %s | %s | %d | %d | %d | %d | %d |" % (
            x["cycle"], "-" if x["board_ms"] is None else "%.1f" % (x["board_ms"] / 1000.0), x["wall_s"],
            _n(x["heap_free"]), _n(x["heap_max_block_gc_blocks"]), x["log_bytes"], x["log_segments"], x["placed"],
            x["faulted"], x["skipped"]))
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="an N-cycle feeder night on the virtual board: heap, log, counters")
    ap.add_argument("--count", type=int, default=2000, help="cycles (default 2000)")
    ap.add_argument("--seed", type=int, default=7, help="the feeder scenario's seed (default 7)")
    ap.add_argument("--every", type=int, help="sample every K cycles (default: count/50, at least 1)")
    ap.add_argument("--out", default=".", help="where night-N.json and night-N.md go (default: here)")
    ap.add_argument("--wall-s", type=float, help="give up after this many seconds (default 120 a cycle)")
    ap.add_argument("--tiny", action="store_true", help="2 cycles, sampled every cycle (for the tests)")
    a = ap.parse_args(argv)
    if a.tiny:
        a.count, a.every = 2, 1
    if a.count < 1:
        ap.error("--count must be 1 or more")
    every = a.every or max(1, a.count // 50)
    s = run_night(a.count, a.seed, every, a.wall_s or 120.0 * a.count)
    for x in lines(s):
        print(x)
    os.makedirs(a.out, exist_ok=True)
    base = Path(a.out) / ("night-%d" % a.count)
    base.with_suffix(".json").write_text(json.dumps(s, indent=1))
    base.with_suffix(".md").write_text(markdown(s))
    print("wrote %s.json and %s.md" % (base, base))
    return 0 if s["counters_match_judge"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
