# Hardware-in-the-loop figures against the virtual board (deployed firmware under the unix
# micropython, no plant on the board side; the MuJoCo plant runs here, host/hil.py):
#   - lockstep cycles per minute (nominal, seeds 1..N, over loopback TCP)
#   - real-time HIL round trip (sensor frame sent -> first HIL_ACT that used it), median and p99,
#     over a pty (as a Pico's USB serial port is), and the share of sensor frames the board
#     answered (it steps on the newest frame, so a board slower than real time skips some)
# Usage: .venv/bin/python tools/bench/hil_bench.py [--cycles N] [--realtime-runs M] [--tiny]
# (--tiny: one cycle of each, for the tests)
import argparse
import shutil
import statistics
import tempfile
import time

from surepick.host.engines.hil import HilCycle, percentile
from surepick.host.engines.vboard import install_firmware as deploy_firmware
from surepick.host.vboard import VirtualBoard


def lockstep(cycles):
    flash = tempfile.mkdtemp(prefix="hilbench-")
    deploy_firmware(flash)
    walls, ok, rtt = [], 0, []
    try:
        with VirtualBoard(flash) as board:
            for seed in range(1, cycles + 1):
                s = HilCycle(board.address, "nominal", seed, "lockstep")
                t0 = time.perf_counter()
                rec = s.run(clear_fault=True)
                walls.append(time.perf_counter() - t0)
                s.client.close()
                ok += rec["success"]
                rtt += [v * 1e6 for v in s.latency_s]
    finally:
        shutil.rmtree(flash, ignore_errors=True)
    return {"cycles": cycles, "placed": ok, "wall_s_per_cycle_median": round(statistics.median(walls), 2),
            "cycles_per_minute": round(60.0 * cycles / sum(walls), 2),
            "tick_round_trip_us_median": round(statistics.median(rtt)),
            "tick_round_trip_us_p99": round(percentile(rtt, 99))}


def realtime(runs):
    flash = tempfile.mkdtemp(prefix="hilbench-")
    deploy_firmware(flash)
    lat, periods, outcomes, late, acts, frames = [], [], [], 0, 0, 0
    try:
        with VirtualBoard(flash, pty=True) as board:
            for seed in range(1, runs + 1):
                s = HilCycle(board.address, "nominal", seed, "realtime")
                rec = s.run(clear_fault=True)
                s.client.close()
                lat += [v * 1e6 for v in s.latency_s]
                periods += s.board_period_us
                outcomes.append("placed" if rec["success"] else rec["outcome"])
                late += s.late_sends
                acts += rec["link"]["acts"]
                frames += rec["link"]["sensor_frames"]
    finally:
        shutil.rmtree(flash, ignore_errors=True)
    return {"runs": runs, "port": "pty", "outcomes": outcomes, "samples": len(lat),
            "latency_us_median": round(statistics.median(lat)), "latency_us_p99": round(percentile(lat, 99)),
            "jitter_us_sd": round(statistics.pstdev(lat)),
            "board_period_us_median": statistics.median(periods),
            "board_period_us_p99": percentile(periods, 99), "host_late_sends": late,
            "frames_answered_share": round(acts / max(frames, 1), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--realtime-runs", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="one cycle of each (for the tests)")
    a = ap.parse_args()
    if a.tiny:
        a.cycles, a.realtime_runs = 1, 1
    print("lockstep (TCP):", lockstep(a.cycles), flush=True)
    print("realtime (pty):", realtime(a.realtime_runs), flush=True)


if __name__ == "__main__":
    main()
