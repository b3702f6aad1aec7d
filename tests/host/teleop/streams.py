# Recorded pose streams made by the tests: an arm-side path (what the tool should do, in the
# arm's Z-up frame, mm) turned into what a VR controller held by an operator facing the arm would
# report (OpenVR's Y-up frame, metres, hand-sized by 1/scale). The change of frame here is
# written out by hand (x, y, z)_arm -> (-y, z, -x)_openvr for an operator at heading -90, as an
# oracle independent of surepick.host.teleop.coord_frames.
import math

import numpy as np

from surepick.host.teleop.sample import Buttons, Sample

HOME_MM = np.array([100.0, 0.0, 80.0])     # the plant's home pose (0, 90, -90, -90): tool down
# The hand speed (after scale) at which the board's teleop mode follows the tests' 30 mm circles in
# the central workspace within 2 mm RMS / 5 mm worst in every plane (tests/host/teleop/test_sim_tracking.py;
# measured: at 60 mm/s the xz circle's worst is 6.7 mm).
FOLLOWED_MM_S = 50.0
HAND_ORIGIN_M = np.array([0.25, 1.10, -0.30])   # where the operator's hand starts in OpenVR space


def arm_to_openvr(d_arm_mm, scale):
    # An arm-side displacement (mm, Z-up, x forward) -> the hand displacement in OpenVR (m).
    x, y, z = (v / 1000.0 / scale for v in d_arm_mm)
    return np.array([-y, z, -x])


def hand_rotation(pitch_deg):
    # A controller pointing forward (OpenVR -Z, which faces the arm's +x) tipped by pitch about
    # its right axis (+X): a rotation about OpenVR's X axis.
    a = math.radians(pitch_deg)
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def sample_at(t, d_arm_mm, scale, clutch=True, fine=False, grip=0.0, pitch_deg=0.0):
    pose = np.hstack([hand_rotation(pitch_deg), (HAND_ORIGIN_M + arm_to_openvr(d_arm_mm, scale)).reshape(3, 1)])
    return Sample(t, pose, Buttons(clutch, fine, grip))


def smooth_step(u):
    u = min(max(u, 0.0), 1.0)
    return u * u * u * (10 + u * (-15 + 6 * u))     # minimum jerk 0..1


def path_stream(path, duration_s, rate_hz=90.0, scale=0.15, clutch_at_s=0.1):
    # path(t) -> arm-side target (mm, Z-up) for t >= clutch_at_s; the stream starts at HOME_MM.
    out = []
    n = int(round(duration_s * rate_hz))
    for k in range(n + 1):
        t = k / rate_hz
        p = path(t) if t >= clutch_at_s else HOME_MM
        out.append(sample_at(t, np.asarray(p) - HOME_MM, scale, clutch=t >= clutch_at_s))
    return out


def move_then_circle(centre_mm=(170.0, 0.0, 110.0), radius_mm=40.0, speed_mm_s=200.0, plane="xy",
                     laps=2.0, approach_s=1.5, settle_s=0.4, ramp_s=0.4):
    # Glide from home to the circle's start, then go round at speed_mm_s (reached over ramp_s with
    # a smooth speed ramp), then stop smoothly. Returns (path function, duration).
    c = np.asarray(centre_mm, dtype=float)
    e1, e2 = {"xy": ((1, 0, 0), (0, 1, 0)), "xz": ((1, 0, 0), (0, 0, 1)), "yz": ((0, 1, 0), (0, 0, 1))}[plane]
    e1, e2 = np.array(e1, float), np.array(e2, float)
    start = c + radius_mm * e1
    t_move = 0.1
    t_circle = t_move + approach_s + settle_s
    w = speed_mm_s / radius_mm
    lap_s = 2 * math.pi / w
    cruise_s = laps * lap_s

    def phase(t):
        # angle travelled: speed ramps up over ramp_s, cruises, ramps down over ramp_s
        u = t - t_circle
        if u <= 0:
            return 0.0
        if u < ramp_s:
            return w * (u * u / (2 * ramp_s))
        a0 = w * ramp_s / 2
        if u < ramp_s + cruise_s:
            return a0 + w * (u - ramp_s)
        v = u - ramp_s - cruise_s
        if v < ramp_s:
            return a0 + w * cruise_s + w * (v - v * v / (2 * ramp_s))
        return a0 + w * cruise_s + w * ramp_s / 2

    def path(t):
        if t < t_circle:
            return HOME_MM + smooth_step((t - t_move) / approach_s) * (start - HOME_MM)
        a = phase(t)
        return c + radius_mm * (math.cos(a) * e1 + math.sin(a) * e2)

    duration = t_circle + ramp_s * 2 + cruise_s + 0.5
    return path, duration


def run_stream(samples, part=None, tail_s=0.5, **settings):
    # The recorded stream through the whole pipeline into the simulated arm, in virtual time.
    from surepick.host.teleop.pipeline import Settings
    from surepick.host.teleop.runner import TeleopSession, run_recorded
    from surepick.host.teleop.session_log import SessionLog
    from surepick.host.teleop.sim_target import SimTarget
    session = TeleopSession(Settings(**settings), SimTarget(part=part), SessionLog(None))
    summary = run_recorded(session, samples, tail_s=tail_s)
    return summary, session


def targets_of(session):
    return np.array([tg for _, tg, _ in session.log.ticks])


def stream_speed_mm_s(samples, scale=0.15):
    # The arm-side speed the stream asks for, from the hand positions (independent of the pipeline).
    p = np.array([s.pose[:, 3] for s in samples if s.pose is not None and s.buttons.clutch])
    t = np.array([s.t for s in samples if s.pose is not None and s.buttons.clutch])
    v = np.linalg.norm(np.diff(p, axis=0), axis=1) / np.diff(t) * 1000.0 * scale
    return float(v.max())


def waypoint_stream(steps, start_mm=HOME_MM, rate_hz=90.0, scale=0.15, clutch_at_s=0.1):
    # A stream that moves the tool through waypoints: steps = [(to_mm, seconds, grip, mark), ...],
    # each a minimum-jerk move from where the last one ended (a hold when `to_mm` is the same),
    # the jaw at `grip` all along it, the teach `mark` (or None) on its last sample.
    out = []
    t = 0.0
    here = np.asarray(start_mm, dtype=float)
    out.append(sample_at(t, here - HOME_MM, scale, clutch=False))
    t = clutch_at_s
    for to, seconds, grip, mark in steps:
        to = np.asarray(to, dtype=float)
        n = max(1, int(round(seconds * rate_hz)))
        for k in range(1, n + 1):
            p = here + smooth_step(k / n) * (to - here)
            s = sample_at(t + k / rate_hz, p - HOME_MM, scale, grip=grip)
            if k == n:
                s.mark = mark
            out.append(s)
        t += n / rate_hz
        here = to
    return out


LIGHT_GRIP = 1.0 - 23.0 / 40.0     # the trigger half pressed: the jaw commanded to 23 mm (40 mm open)


def teach_stream(pick_mm=(160.0, -60.0, 15.5), place_mm=(150.0, 80.0, 20.5), pick_above_mm=55.0,
                 place_above_mm=50.0):
    # An operator teaching the reference cell's job by moving the arm: over the part, mark the
    # approach; down, mark the pick; close lightly on the part, mark the width; grip firmly, lift,
    # over the bin, mark the approach; down, mark the place; open; up. Heights: mm above each pose.
    pick, place = np.asarray(pick_mm, float), np.asarray(place_mm, float)
    up_pick = pick + [0.0, 0.0, pick_above_mm]
    up_place = place + [0.0, 0.0, place_above_mm]
    return waypoint_stream([
        (up_pick, 1.6, 0.0, None), (up_pick, 0.5, 0.0, "pick_approach"),
        (pick, 1.6, 0.0, None), (pick, 0.6, 0.0, "pick"),
        (pick, 1.2, LIGHT_GRIP, "width"), (pick, 0.5, 1.0, None),
        (up_pick, 1.6, 1.0, None), (up_place, 2.2, 1.0, None), (up_place, 0.4, 1.0, "place_approach"),
        (place, 1.6, 1.0, None), (place, 0.6, 1.0, "place"),
        (place, 0.8, 0.0, None), (up_place, 1.2, 0.0, None)])
