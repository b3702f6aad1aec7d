# `surepick teleop` end to end in a subprocess (as a user runs it): a recorded stream into the
# simulated arm, bad input, missing devices, keyboard jog over a real pty (the layer rule: tests/test_layers.py).
import csv
import json
import os
import pty
import re
import select
import subprocess
import time

import numpy as np

from surepick.host.teleop.session_log import COLUMNS
from surepick.host.teleop.sources.stream_file import write_jsonl
from tests.host.teleop.streams import FOLLOWED_MM_S, move_then_circle, path_stream

from tests.support.cli import SUREPICK_BIN, headless_env as _env
SUREPICK = [SUREPICK_BIN]


def test_recorded_stream_writes_the_log_and_the_summary(tmp_path):
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=FOLLOWED_MM_S,
                                      laps=0.5)
    samples = path_stream(path, duration)
    samples[40].pose = None
    write_jsonl(tmp_path / "s.jsonl", samples)
    out = tmp_path / "run"
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(tmp_path / "s.jsonl"), "--target", "sim",
                                   "--out", str(out), "--part", "none"],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    for key in ("samples", "dropped", "tracking_rms_mm", "tracking_max_mm", "latency_p50_ms", "latency_p99_ms"):
        assert summary[key] is not None, key
    assert summary["samples"] == len(samples) and summary["dropped"] == 1
    assert summary["tracking_rms_mm"] <= 2.0
    with open(out / "teleop.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == COLUMNS
    assert len(rows) == len(samples)
    assert rows[40]["status"] == "drop_lost" and rows[40]["raw_m03"] == ""
    assert all(float(r["latency_ms"]) >= 0 for r in rows)
    assert (out / "teleop_final.png").stat().st_size > 1000, summary["snapshot"]


def test_the_sim_targets_board_runs_at_the_configs_loop_period(tmp_path):
    # --config gives the simulated board its settings (a board has its own on its flash: refused).
    path, duration = move_then_circle(centre_mm=(135.0, -20.0, 65.0), radius_mm=30.0, speed_mm_s=FOLLOWED_MM_S,
                                      laps=0.1, approach_s=0.3)
    write_jsonl(tmp_path / "s.jsonl", path_stream(path, duration))
    (tmp_path / "cfg.json").write_text(json.dumps({"loop_period_ms": 5}))
    out = tmp_path / "run"
    args = ["teleop", "--source", str(tmp_path / "s.jsonl"), "--out", str(out), "--part", "none",
            "--viewer", "off", "--config", str(tmp_path / "cfg.json")]
    r = subprocess.run(SUREPICK + args + ["--target", "sim"], capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["board_period_ms"] == 5 and summary["board_refused"] == {}
    r = subprocess.run(SUREPICK + args + ["--target", "socket://127.0.0.1:9"], capture_output=True, text=True,
                       env=_env(), timeout=60)
    assert r.returncode == 2 and "--config is for --target sim" in r.stderr, r.stderr


def test_a_bad_stream_line_is_named_and_nothing_runs(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"t": 0, "pose": [1,0,0,0, 0,1,0,0, 0,0,1,0], "buttons": {"clutch": true}}\n'
                 '{"t": 0.01, "buttons": {"clutch": true}}\n'
                 '{"t": 0.02, "pose": [1,0,0], "buttons": {}}\n')
    out = tmp_path / "run"
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(p), "--out", str(out)], capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert r.returncode == 2
    assert "bad.jsonl:3" in r.stderr and "12 numbers" in r.stderr
    assert not out.exists()


def test_missing_device_drivers_name_the_extra():
    for source, extra in (("openvr", "openvr"), ("spacemouse", "spacemouse")):
        r = subprocess.run(SUREPICK + ["teleop", "--source", source], capture_output=True, text=True, env=_env(),
                           timeout=120)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].endswith("pip install surepick[%s]" % extra), r.stderr


def test_an_unreachable_target_is_announced(tmp_path):
    from tests.host.teleop.streams import sample_at, smooth_step
    samples = [sample_at(k / 90.0, np.array([250.0 * smooth_step((k / 90.0 - 0.2) / 2.0), 0.0, 0.0]), 0.15,
                         clutch=k >= 9) for k in range(270)]
    write_jsonl(tmp_path / "far.jsonl", samples)
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(tmp_path / "far.jsonl"), "--part", "none"],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "out of reach" in ln]
    assert len(said) == 1 and "too far" in said[0], r.stderr


def test_a_board_port_with_nothing_there_is_named(tmp_path):
    import socket
    with socket.socket() as s:               # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = "socket://127.0.0.1:%d" % s.getsockname()[1]
    p = tmp_path / "s.jsonl"
    write_jsonl(p, path_stream(lambda t: [100.0, 0.0, 80.0], 0.2))
    r = subprocess.run(SUREPICK + ["teleop", "--source", str(p), "--target", port], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert r.returncode == 1 and port in r.stderr and "Traceback" not in r.stderr, r.stderr


def _read_until(fd, needle, timeout_s):
    buf = b""
    end = time.monotonic() + timeout_s
    while needle not in buf and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf


def test_keyboard_jog_over_a_pty(tmp_path):
    # The terminal is a real pty: the test types, the verb reads raw keys. Four steps forward of
    # 5 mm, then joint mode and one 5-degree step of the base, then quit.
    master, slave = pty.openpty()
    out = tmp_path / "kb"
    proc = subprocess.Popen(SUREPICK + ["teleop", "--source", "keyboard", "--out", str(out), "--part", "none",
                                        "--viewer", "off"],
                            stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=_env())
    os.close(slave)
    try:
        seen = _read_until(master, b"keyboard jog", 120)
        assert b"keyboard jog" in seen, seen
        for ch in "wwww":
            os.write(master, ch.encode())
            time.sleep(0.15)
        time.sleep(0.5)
        os.write(master, b"m")
        time.sleep(0.2)
        os.write(master, b"q")
        time.sleep(0.8)
        os.write(master, b"x")
        stdout, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode == 0, stdout
    with open(out / "teleop.csv") as f:
        last = list(csv.DictReader(f))[-1]
    # expected: home (100, 0, 80) moved 20 mm along x, then turned 5 degrees about the base axis
    a = np.radians(5.0)
    expect = np.array([120.0 * np.cos(a), 120.0 * np.sin(a), 80.0])
    got = np.array([float(last["target_x_mm"]), float(last["target_y_mm"]), float(last["target_z_mm"])])
    assert np.allclose(got, expect, atol=0.5), (got, expect)
    assert abs(float(last["ik_q0_deg"]) - 5.0) < 0.05


def _pose_lines(text, what):
    # "tool x=105.0 y=0.0 z=80.0 mm, pitch -90.0 deg, jaw 40.0 mm[; joints a b c d deg]" -> numbers
    out = []
    for m in re.finditer(r"%s x=(\S+) y=(\S+) z=(\S+) mm, pitch (\S+) deg, jaw (\S+) mm(?:; joints (.+?) deg)?"
                         % what, text):
        out.append(([float(v) for v in m.groups()[:5]], [float(v) for v in m.group(6).split()] if m.group(6) else None))
    return out


def test_keyboard_jog_prints_where_the_tool_is_after_every_key(tmp_path):
    # Without a viewer a person sees the pose in the terminal: the start pose (the sim's home,
    # jaw centre (100, 0, 80) mm pointing down), then after each key where the tool goes. Oracle:
    # the home pose, steps of 5 mm, and the base turn done by hand (x, y = r cos, r sin).
    master, slave = pty.openpty()
    proc = subprocess.Popen(SUREPICK + ["teleop", "--source", "keyboard", "--part", "none", "--viewer", "off"],
                            stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=_env())
    os.close(slave)
    seen = b""
    try:
        seen += _read_until(master, b"start x=", 120)
        for ch, wait_for in (("w", b"tool x="), ("r", b"tool x="), ("m", b"joints"), ("q", b"joints")):
            mark = seen.count(wait_for)
            os.write(master, ch.encode())
            end = time.monotonic() + 20
            while seen.count(wait_for) <= mark and time.monotonic() < end:
                seen += _read_until(master, b"\n", 1)
        os.write(master, b"x")
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    start = _pose_lines(text, "start")
    assert start and np.allclose(start[0][0][:4], [100.0, 0.0, 80.0, -90.0], atol=0.05), text
    tool = _pose_lines(text, "tool")
    assert len(tool) >= 4, text
    assert np.allclose(tool[0][0][:4], [105.0, 0.0, 80.0, -90.0], atol=0.05), tool        # w: x + 5 mm
    assert tool[0][0][4] == 40.0 and tool[0][1] is None                                    # jaw open, cartesian
    assert np.allclose(tool[1][0][:4], [105.0, 0.0, 85.0, -90.0], atol=0.05), tool        # r: z + 5 mm
    a = np.radians(5.0)
    last, joints = tool[-1]
    assert joints is not None and abs(joints[0] - 5.0) < 0.05, tool                        # q: base + 5 deg
    assert np.allclose(last[:3], [105.0 * np.cos(a), 105.0 * np.sin(a), 85.0], atol=0.1), tool
