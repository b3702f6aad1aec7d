# Teleop sample-to-setpoint latency in the sim: a 90 Hz pose stream (a circle at 0.2 m/s, arm
# side) played in real time through the two-thread runner (reader thread at the stream's rate,
# control loop at 100 Hz, the simulated arm advanced in real time). Latency = wall clock from a
# sample reaching the pipeline to the joint setpoint computed from it, written to the servo
# drivers; processing = the pipeline's own compute within that. Prints the figures, then one
# JSON line.
#   .venv/bin/python bench/teleop_latency.py [--seconds 10] [--tiny]
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from surepick.teleop.pipeline import Settings  # noqa: E402
from surepick.teleop.runner import Session, run_live  # noqa: E402
from surepick.teleop.session_log import SessionLog  # noqa: E402
from surepick.teleop.sim_target import SimTarget  # noqa: E402
from surepick.teleop.sources.base import PoseSource  # noqa: E402
from tests.teleop.streams import move_then_circle, path_stream  # noqa: E402


class Paced(PoseSource):
    # A recorded stream the runner paces by its timestamps (realtime = False).
    name = "synthetic circle, 90 Hz"
    realtime = False

    def __init__(self, samples):
        self.samples = samples

    def __iter__(self):
        return iter(self.samples)


def main(argv=None):
    ap = argparse.ArgumentParser(description="teleop sample-to-setpoint latency in the sim (real time, two threads)")
    ap.add_argument("--seconds", type=float, default=10.0, help="circling time (default 10)")
    ap.add_argument("--control-hz", type=float, default=100.0)
    ap.add_argument("--tiny", action="store_true", help="a 1.5 s run (the tests run this)")
    args = ap.parse_args(argv)
    laps = 0.3 if args.tiny else max(1.0, args.seconds / 0.94)
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=200.0, laps=laps,
                                      approach_s=0.6 if args.tiny else 1.5)
    samples = path_stream(path, duration)
    settings = Settings(control_hz=args.control_hz)
    session = Session(settings, SimTarget(part=None), SessionLog(None))
    t0 = time.perf_counter()
    s = run_live(session, Paced(samples))
    wall = time.perf_counter() - t0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    out = {"bench": "teleop_latency", "samples": s["samples"], "control_hz": args.control_hz,
           "latency_p50_ms": s["latency_p50_ms"], "latency_p99_ms": s["latency_p99_ms"],
           "processing_p50_ms": s["processing_p50_ms"], "processing_p99_ms": s["processing_p99_ms"],
           "control_overruns": s["control_overruns"], "tracking_rms_mm": s["tracking_rms_mm"],
           "tracking_max_mm": s["tracking_max_mm"], "wall_s": wall, "stream_s": samples[-1].t,
           "load_avg_1min": load}
    print("teleop_latency: %d samples at 90 Hz, control %g Hz, real time (load average %s)"
          % (out["samples"], args.control_hz, "%.1f" % load if load is not None else "?"))
    print("latency_ms p50 %.2f p99 %.2f" % (out["latency_p50_ms"], out["latency_p99_ms"]))
    print("processing_ms p50 %.2f p99 %.2f" % (out["processing_p50_ms"], out["processing_p99_ms"]))
    print("tracking_mm rms %.2f max %.2f; control overruns %d" % (out["tracking_rms_mm"], out["tracking_max_mm"],
                                                                 out["control_overruns"]))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
