# The session log: DIR/teleop.csv, one row per sample (raw pose, converted, filtered, target, IK
# joints, commanded, measured tool point, latency), written as the session runs so an interrupted
# session keeps what it did; and DIR/summary.json at the end.
#
# Tracking error: at the end of each control period, the distance between the Cartesian target
# commanded at the start of that period and the tool point measured in the physics. A board has
# no joint feedback: there the tool point is not measured (blank), the commanded joints are the
# ones the board says its servo drivers held for that setpoint, and jaw_pot_um is its pot.
# Latency: from a sample reaching the pipeline to the first joint setpoint computed from it (the
# sim); to the board's answer for that setpoint (a board; host_latency_ms: to the frame written).
import csv
import json
import math
import os

import numpy as np

RAW = ["raw_m%d%d" % (i, j) for i in range(3) for j in range(4)]
COLUMNS = (["seq", "t_s", "status", "clutch", "fine", "grip_jaw_um"] + RAW
           + ["hand_x_m", "hand_y_m", "hand_z_m", "hand_pitch_deg",
              "goal_x_mm", "goal_y_mm", "goal_z_mm", "goal_pitch_deg", "ws_clamped",
              "tick", "tick_ms", "filt_x_mm", "filt_y_mm", "filt_z_mm", "filt_pitch_deg",
              "target_x_mm", "target_y_mm", "target_z_mm", "target_pitch_deg", "reach_clamped", "reach_reason", "rate_limited",
              "ik_q0_deg", "ik_q1_deg", "ik_q2_deg", "ik_q3_deg", "ik_iters", "ik_resid_mm", "ik_check_deg",
              "cmd_q0_deg", "cmd_q1_deg", "cmd_q2_deg", "cmd_q3_deg", "cmd_jaw_um",
              "meas_x_mm", "meas_y_mm", "meas_z_mm", "meas_pitch_deg", "track_err_mm", "latency_ms",
              "setpoint_seq", "host_latency_ms", "jaw_pot_um"])


def _f(v, fmt="%.4f"):
    if v is None:
        return ""
    v = float(v)
    return "nan" if math.isnan(v) else fmt % v


def percentile(values, p):
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), p))


class SessionLog:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self._f = None
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            self._f = open(os.path.join(out_dir, "teleop.csv"), "w", newline="")
            self._w = csv.writer(self._f)
            self._w.writerow(COLUMNS)
        self.samples = 0
        self.latencies_ms = []
        self.host_latencies_ms = []
        self.unanswered = 0           # samples whose setpoint the board never answered
        self.jaw_errors_um = []       # |jaw command - jaw pot| where a pot reading came back
        self.processing_ms = []       # of the latency, the pipeline's own compute (both stages)
        self.errors_mm = []
        self.pitch_errors_deg = []
        self.target_steps_mm = []
        self.held_back_mm = []        # commanded target vs the filtered hand target (clamps, joint limits)
        self.ik_iters = []
        self.ik_check_deg = []
        self.ticks = []           # (tick_ms, target xyz, measured xyz) kept for tests and plots
        self._last_target = None

    def tick(self, tick_ms, ctrl, cmd_q_deg, cmd_jaw_um, measured):
        # One control period ended: ctrl was commanded at its start, `measured` at its end (None:
        # the target cannot measure its tool point).
        err = None
        if measured is not None:
            err = float(np.linalg.norm(ctrl.target_mm - measured[:3]))
            self.errors_mm.append(err)
            self.pitch_errors_deg.append(abs(ctrl.target_pitch - measured[3]))
        if self._last_target is not None:
            self.target_steps_mm.append(float(np.linalg.norm(ctrl.target_mm - self._last_target)))
        self._last_target = ctrl.target_mm.copy()
        self.held_back_mm.append(float(np.linalg.norm(ctrl.target_mm - ctrl.filtered_mm)))
        self.ik_iters.append(ctrl.ik_iters)
        self.ik_check_deg.append(ctrl.ik_check_deg)
        self.ticks.append((tick_ms, ctrl.target_mm.copy(), None if measured is None else np.asarray(measured[:3]).copy()))
        return err

    def sample(self, hand, raw_pose, tick_ms, ctrl, cmd_q_deg, cmd_jaw_um, measured, err_mm, latency_ms,
               host_ms=None, seq=None, jaw_pot_um=None):
        self.samples += 1
        if latency_ms is not None:
            self.latencies_ms.append(latency_ms)
        elif seq is not None:
            self.unanswered += 1
        if host_ms is not None:
            self.host_latencies_ms.append(host_ms)
        if jaw_pot_um is not None and cmd_jaw_um is not None:
            self.jaw_errors_um.append(abs(cmd_jaw_um - jaw_pot_um))
        self.processing_ms.append((hand.done_s + ctrl.done_s) * 1000.0)
        if self._f is None:
            return
        measured = [None] * 4 if measured is None else measured
        raw = [""] * 12 if raw_pose is None else [_f(v, "%.6f") for v in np.asarray(raw_pose).reshape(12)]
        hm = [None] * 3 if hand.hand_m is None else list(hand.hand_m)
        row = ([hand.seq, "%.4f" % hand.t, hand.status, int(hand.clutch), int(hand.fine), hand.jaw_um] + raw
               + [_f(v, "%.6f") for v in hm] + [_f(hand.hand_pitch, "%.3f")]
               + [_f(v, "%.3f") for v in hand.target_mm] + [_f(hand.target_pitch, "%.3f"), int(hand.ws_clamped)]
               + [ctrl.tick, tick_ms] + [_f(v, "%.3f") for v in ctrl.filtered_mm] + [_f(ctrl.filtered_pitch, "%.3f")]
               + [_f(v, "%.3f") for v in ctrl.target_mm] + [_f(ctrl.target_pitch, "%.3f"), int(ctrl.reach_clamped),
                                                            ctrl.reach_reason, int(ctrl.rate_limited)]
               + [_f(v, "%.4f") for v in ctrl.q_ik_deg] + [ctrl.ik_iters, _f(ctrl.ik_resid_mm, "%.4f"),
                                                           _f(ctrl.ik_check_deg, "%.4f")]
               + [_f(v, "%.3f") for v in cmd_q_deg] + ["" if cmd_jaw_um is None else cmd_jaw_um]
               + [_f(v, "%.3f") for v in measured] + [_f(err_mm, "%.3f"), _f(latency_ms, "%.3f")]
               + ["" if seq is None else seq, _f(host_ms, "%.3f"), "" if jaw_pot_um is None else jaw_pot_um])
        self._w.writerow(row)

    def summary(self, hand_stage, control_stage, extra=None):
        e = self.errors_mm
        gate = hand_stage.gate
        out = {
            "samples": self.samples,
            "dropped": gate.dropped,
            "dropped_by_reason": {k: v for k, v in gate.counts.items() if k != "reanchor"},
            "reanchors": gate.counts["reanchor"],
            "rezeros": hand_stage.clutch.rezeros,
            "workspace_clamped_samples": hand_stage.ws_clamps,
            "reach_clamped_ticks": control_stage.reach_clamps,
            "rate_limited_ticks": control_stage.rate_limits,
            "target_vs_hand_max_mm": float(max(self.held_back_mm)) if self.held_back_mm else 0.0,
            "control_ticks": len(self.ticks),
            "tracking_rms_mm": float(math.sqrt(np.mean(np.square(e)))) if e else None,
            "tracking_max_mm": float(max(e)) if e else None,
            "tracking_p50_mm": percentile(e, 50),
            "tracking_pitch_rms_deg": float(math.sqrt(np.mean(np.square(self.pitch_errors_deg)))) if e else None,
            "target_step_max_mm": float(max(self.target_steps_mm)) if self.target_steps_mm else 0.0,
            "latency_p50_ms": percentile(self.latencies_ms, 50),
            "latency_p99_ms": percentile(self.latencies_ms, 99),
            "host_latency_p50_ms": percentile(self.host_latencies_ms, 50),
            "host_latency_p99_ms": percentile(self.host_latencies_ms, 99),
            "unanswered_samples": self.unanswered,
            "processing_p50_ms": percentile(self.processing_ms, 50),
            "processing_p99_ms": percentile(self.processing_ms, 99),
            "ik_iterations_p50": percentile(self.ik_iters, 50),
            "ik_iterations_max": int(max(self.ik_iters)) if self.ik_iters else None,
            "ik_dls_vs_analytic_max_deg": float(max(self.ik_check_deg)) if self.ik_check_deg else None,
        }
        if extra:
            out.update(extra)
        return out

    def close(self, summary=None):
        if self._f is not None:
            self._f.close()
            self._f = None
        if summary is not None and self.out_dir:
            path = os.path.join(self.out_dir, "summary.json")
            with open(path + ".tmp", "w") as f:
                json.dump(summary, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(path + ".tmp", path)
