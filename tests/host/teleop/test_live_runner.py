# The real-time, two-thread runner (reader thread + fixed-rate control loop). No timing is
# asserted here (tools/bench/teleop_latency.py measures it; its tiny mode runs with the other benches in
# tests/bench/test_bench_tiny.py): the threads hand every sample over and latency is measured.
from surepick.host.teleop.pipeline import Settings
from surepick.host.teleop.runner import TeleopSession, run_live
from surepick.host.teleop.session_log import SessionLog
from surepick.host.teleop.sim_target import SimTarget
from surepick.host.teleop.sources.base import PoseSource
from tests.host.teleop.streams import move_then_circle, path_stream


class Paced(PoseSource):
    realtime = False
    name = "test"

    def __init__(self, samples):
        self.samples = samples
        self.closed = False

    def __iter__(self):
        return iter(self.samples)

    def close(self):
        self.closed = True


def test_live_runner_hands_every_sample_to_the_control_loop():
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=100.0, laps=0.2,
                                      approach_s=0.4)
    samples = path_stream(path, duration)
    src = Paced(samples)
    session = TeleopSession(Settings(), SimTarget(part=None), SessionLog(None))
    s = run_live(session, src, tail_s=0.2)
    assert src.closed
    assert s["samples"] == len(samples) and s["dropped"] == 0
    assert s["mode"].startswith("live")
    assert s["control_ticks"] > 0 and s["sim_s"] > 0
    assert 0.0 < s["latency_p50_ms"] <= s["latency_p99_ms"]
    assert s["wall_s"] >= duration * 0.9                           # it really ran in real time
