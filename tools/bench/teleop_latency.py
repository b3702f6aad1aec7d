# Teleop sample-to-setpoint latency, in the sim and over the virtual board's link.
#
#   sim    a 90 Hz pose stream (a circle at 0.2 m/s, arm side) played in real time through the
#          two-thread runner (reader thread at the stream's rate, control loop at 100 Hz, the
#          simulated arm advanced in real time). Latency = wall clock from a sample reaching the
#          pipeline to the joint setpoint computed from it, handed to the simulated board (its
#          teleop mode reads it in its next tick);
#          processing = the pipeline's own compute within that.
#   board  the same stream into the firmware's teleop mode on the virtual board (the real
#          `micropython` running the deployed firmware, lockstep with the MuJoCo plant) over its
#          TCP console, through the host's board target (teleop/board_target.py). Latency = wall
#          clock from a sample reaching the pipeline to the board's answer (TELEOP_STATE) for the
#          setpoint that carried it: an upper bound of sample-to-setpoint, the answer's way back
#          included; host = to the SETPOINT frame written. The virtual board keeps its own clock
#          (virtual ms per wall ms printed): a board slower than the stream gets fewer setpoints
#          (flow control), never a queue.
# Prints the figures, then one JSON line.
#   .venv/bin/python tools/bench/teleop_latency.py [--seconds 10] [--control-hz 100] [--target sim|board|both] [--tiny]
import argparse
import json
import os
import sys
import tempfile
import time

from surepick.host.source_tree import CHECKOUT

sys.path.insert(0, str(CHECKOUT))    # the test streams (tests/host/teleop/streams.py) drive the sessions

from surepick.host.teleop.pipeline import Settings  # noqa: E402
from surepick.host.teleop.runner import TeleopSession, run_live  # noqa: E402
from surepick.host.teleop.session_log import SessionLog  # noqa: E402
from surepick.host.teleop.sim_target import SimTarget  # noqa: E402
from surepick.host.teleop.sources.base import PoseSource  # noqa: E402
from tests.host.teleop.streams import move_then_circle, path_stream  # noqa: E402


class Paced(PoseSource):
    # A recorded stream the runner paces by its timestamps (realtime = False).
    name = "synthetic circle, 90 Hz"
    realtime = False

    def __init__(self, samples):
        self.samples = samples

    def __iter__(self):
        return iter(self.samples)


def _stream(args):
    laps = 0.3 if args.tiny else max(1.0, args.seconds / 0.94)
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=200.0, laps=laps,
                                      approach_s=0.6 if args.tiny else 1.5)
    return path_stream(path, duration)


def _load():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def bench_sim(args, samples):
    session = TeleopSession(Settings(control_hz=args.control_hz), SimTarget(part=None), SessionLog(None))
    t0 = time.perf_counter()
    s = run_live(session, Paced(samples))
    wall = time.perf_counter() - t0
    out = {"samples": s["samples"], "latency_p50_ms": s["latency_p50_ms"], "latency_p99_ms": s["latency_p99_ms"],
           "processing_p50_ms": s["processing_p50_ms"], "processing_p99_ms": s["processing_p99_ms"],
           "control_overruns": s["control_overruns"], "tracking_rms_mm": s["tracking_rms_mm"],
           "tracking_max_mm": s["tracking_max_mm"], "wall_s": wall}
    print("teleop_latency: %d samples at 90 Hz, control %g Hz, real time (load average %s)"
          % (out["samples"], args.control_hz, "%.1f" % _load() if _load() is not None else "?"))
    print("latency_ms p50 %.2f p99 %.2f" % (out["latency_p50_ms"], out["latency_p99_ms"]))
    print("processing_ms p50 %.2f p99 %.2f" % (out["processing_p50_ms"], out["processing_p99_ms"]))
    print("tracking_mm rms %.2f max %.2f; control overruns %d" % (out["tracking_rms_mm"], out["tracking_max_mm"],
                                                                 out["control_overruns"]))
    return out


def bench_board(args, samples):
    from surepick.host.engines.vboard_world import board_in_world
    from surepick.host.link.client import LinkClient
    from surepick.shared_fsm import link
    from surepick.host.teleop.board_target import BoardTarget
    from tests.support.vboard import Console, deploy_firmware
    with tempfile.TemporaryDirectory(prefix="surepick-bench-teleop-") as d:
        deploy_firmware(d)
        b = board_in_world(d, "nominal", 0, realtime=True)     # a live stream: the board at a Pico's pace
        ps = b.world_service
        with b:
            con = Console(b.address)
            booted = con.wait(lambda f: f.ftype == link.T_TELEMETRY, 60)
            con.close()
            if booted is None:
                raise SystemExit("the virtual board's firmware sent no telemetry within 60 s")
            with LinkClient(b.address) as c:
                target = BoardTarget(c, timeout=10.0)    # a loaded machine slows the first answer
                session = TeleopSession(Settings(control_hz=args.control_hz), target, SessionLog(None))
                v0, t0 = ps.now_ms, time.perf_counter()
                try:
                    s = run_live(session, Paced(samples))
                finally:
                    target.close()
                wall = time.perf_counter() - t0
                virtual = ps.now_ms - v0
    out = {"samples": s["samples"], "latency_p50_ms": s["latency_p50_ms"], "latency_p99_ms": s["latency_p99_ms"],
           "host_latency_p50_ms": s["host_latency_p50_ms"], "host_latency_p99_ms": s["host_latency_p99_ms"],
           "unanswered_samples": s["unanswered_samples"], "setpoints_sent": s["setpoints_sent"],
           "ticks_not_sent": s["ticks_not_sent"], "deadmans": s["board_deadmans"], "wall_s": wall,
           "virtual_per_wall": virtual / 1000.0 / wall if wall > 0 else None}
    print("teleop_latency board: %d samples at 90 Hz, control %g Hz, over the virtual board's TCP console "
          "(load average %s)" % (out["samples"], args.control_hz, "%.1f" % _load() if _load() is not None else "?"))
    print("board latency_ms p50 %.2f p99 %.2f (to the board's answer)" % (out["latency_p50_ms"], out["latency_p99_ms"]))
    print("board host_ms p50 %.2f p99 %.2f (to the setpoint frame written)"
          % (out["host_latency_p50_ms"], out["host_latency_p99_ms"]))
    print("board setpoints sent %d, control ticks not sent (flow control) %d, unanswered samples %d, deadman holds %s; "
          "virtual ms per wall ms %.2f" % (out["setpoints_sent"], out["ticks_not_sent"], out["unanswered_samples"],
                                           out["deadmans"], out["virtual_per_wall"]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="teleop sample-to-setpoint latency: sim and virtual board (real time)")
    ap.add_argument("--seconds", type=float, default=10.0, help="circling time (default 10)")
    ap.add_argument("--control-hz", type=float, default=100.0)
    ap.add_argument("--target", choices=("sim", "board", "both"), default="both")
    ap.add_argument("--tiny", action="store_true", help="a 1.5 s run of each (the tests run this)")
    args = ap.parse_args(argv)
    samples = _stream(args)
    out = {"bench": "teleop_latency", "control_hz": args.control_hz, "stream_s": samples[-1].t,
           "load_avg_1min": _load()}
    if args.target in ("sim", "both"):
        out["sim"] = bench_sim(args, samples)
    if args.target in ("board", "both"):
        out["board"] = bench_board(args, samples)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
