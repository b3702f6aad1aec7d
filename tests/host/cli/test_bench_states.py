# The bench tells the truth (issue 24), through the real CLI against the virtual board, with the
# board in this process so that what really happened is read from its MuJoCo plant (the joints,
# the jaw, the gripper's current from its servo model, the part) and from its supervisor (how
# often the board booted), never from what the firmware says about itself:
#   - `surepick doctor` on a board holding a part (after an e-stop, after a reset mid-job with a
#     rescue pending and while the rescue runs, in teleop held by its deadman after the teleop
#     session was killed) moves nothing and the gripper's current stays what it was;
#   - every refusal of `surepick job start` names a command that, run next, gets the board out of
#     the state that refused it, until a job is accepted; a teleop session that ends leaves a state
#     `job status` names (killed) or no teleop at all (Ctrl-C, a closed terminal);
#   - Ctrl-C on `job start --wait` stops following, not the arm, and says how to stop the arm
#     (--abort-on-interrupt aborts it);
#   - `surepick board --reset-world` is refused while the firmware holds a part; the emulated
#     RP2040 says "serving on" once its firmware answers, and its hints name options that exist.
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

from surepick.host.cli.board_ready import wait_served
from surepick.host.teleop.sources.stream_file import write_jsonl
from tests.support.bench import PlantBench, bench_env
from tests.support.cli import SUREPICK_BIN, surepick
from tests.support.needs import NEEDS_MICROPYTHON
from tests.host.teleop.streams import HOME_MM, path_stream, smooth_step

pytestmark = NEEDS_MICROPYTHON


def _still(b, timeout=30):
    # Wait until the plant's joints have stood still (below 1 deg/s) in three looks in a row.
    end = time.monotonic() + timeout
    calm = 0
    while calm < 3:
        assert time.monotonic() < end, "the arm never came to rest: %s" % b.truth()["joint_speeds_dps"]
        calm = calm + 1 if max(abs(v) for v in b.truth()["joint_speeds_dps"]) < 1.0 else 0
        time.sleep(0.2)
    return b.truth()


def _until(b, needle, timeout=60):
    # `job status` until its output holds `needle` (or needle(output) is true).
    end = time.monotonic() + timeout
    out = ""
    while time.monotonic() < end:
        out = b.run("job", "status", "--port", b.port).stdout
        if needle(out) if callable(needle) else needle in out:
            return out
        time.sleep(0.3)
    raise AssertionError("%r never showed in job status:\n%s" % (needle, out))


def _same_world(before, after, boots_before, boots_after):
    # The doctor moved, released and unpowered nothing: the same boot, every servo powered as
    # before, the joints and the jaw where they were, the gripper's current what it was.
    assert boots_after == boots_before, "the board was reset (boot %d -> %d)" % (boots_before, boots_after)
    assert after["servos_powered"] == before["servos_powered"], (before["servos_powered"], after["servos_powered"])
    dq = np.abs(np.subtract(after["joint_angles_deg"], before["joint_angles_deg"]))
    assert dq.max() < 0.5, "the arm moved: %s deg" % dq
    assert abs(after["jaw_opening_mm"] - before["jaw_opening_mm"]) < 0.3, (before["jaw_opening_mm"],
                                                                         after["jaw_opening_mm"])
    i0, i1 = before["gripper_current_ma"], after["gripper_current_ma"]
    assert abs(i1 - i0) <= max(25.0, 0.15 * abs(i0)), "the gripper's current went %.0f -> %.0f mA" % (i0, i1)


def _doctor_keeps_the_world(b, *expect):
    before = _still(b)
    boots = b.board.boot_count
    r = b.run("doctor", "--port", b.port, timeout=180)
    time.sleep(1.0)                      # a reset's limp phase would show by now
    after = b.truth()
    _same_world(before, after, boots, b.board.boot_count)
    for text in expect:
        assert text in r.stdout, r.stdout + r.stderr
    assert "not checked" in r.stdout and "doctor --port" in r.stdout, r.stdout
    return before, after, r


def test_doctor_after_an_estop_with_a_part_held_moves_nothing(tmp_path):
    with PlantBench(tmp_path, "estop", 1) as b:
        b.wait_firmware()
        r = b.run("job", "start", "--port", b.port, "--wait")
        assert "cycle ended: fault ESTOP (in LIFT" in r.stdout, r.stdout + r.stderr
        # A held part creeps down in its grip by itself (the plant's friction, about 0.02 mm per
        # second of plant time): its rate, measured before doctor, is what after may show.
        t0 = _still(b)
        time.sleep(1.0)
        t1 = b.truth()
        creep = (t1["part_pos_mm"][2] - t0["part_pos_mm"][2]) / max(1, t1["now_ms"] - t0["now_ms"])
        before, after, r = _doctor_keeps_the_world(b, "holding", "job rescue --place --port %s" % b.port)
        assert before["finger_contact"] and after["finger_contact"] and before["gripper_current_ma"] > 100
        expect = before["part_pos_mm"][2] + creep * (after["now_ms"] - before["now_ms"])
        assert abs(after["part_pos_mm"][2] - expect) < 0.5, (before["part_pos_mm"], after["part_pos_mm"], creep)
        # the monitor names the same states with the same ways out
        mon = b.run("monitor", "--port", b.port, "--plain", "--seconds", "3", "--db", tmp_path / "m.db").stdout
        assert re.search(r"board holding: a part is held .*; way out: `surepick job rescue --place --port %s`"
                         % re.escape(b.port), mon), mon


def test_doctor_with_a_rescue_pending_and_running_moves_nothing(tmp_path):
    # The rail browns out in LIFT: the board resets and boots into INTERRUPTED with the arm
    # unpowered and the part held, waiting for a rescue. At the Pico's pace, so that the rescue
    # still runs while doctor looks.
    with PlantBench(tmp_path, "brownout_mid_lift", 2, realtime=True) as b:
        b.wait_firmware()
        r = b.run("job", "start", "--port", b.port, "--wait")
        assert "cycle ended: fault RAIL_LOW (in LIFT" in r.stdout, r.stdout + r.stderr
        _until(b, "fault INTERRUPTED")
        before, after, _ = _doctor_keeps_the_world(b, "arm_unpowered", "--arm-near")
        assert after["finger_contact"] and after["servos_powered"][:4] == [False] * 4
        r = b.run("job", "rescue", "--rest", "--arm-near", "pick", "--port", b.port)
        assert r.returncode == 0, r.stdout + r.stderr
        _until(b, "an operator's rescue is moving the arm")
        boots = b.board.boot_count
        r = b.run("doctor", "--port", b.port, timeout=180)
        assert "rescue" in r.stdout and "not checked" in r.stdout, r.stdout
        _until(b, lambda out: "holding:" in out and "rescue:" not in out)   # ended at rest, the part held
        assert b.board.boot_count == boots
        t = b.truth()
        assert t["finger_contact"] and all(t["servos_powered"]), t


def _teleop_session_killed(b, tmp_path):
    # A teleop session moves the tool 20 mm forward and then holds still; its terminal is then
    # closed (the process killed, as a closed terminal's SIGHUP does by default): nothing tells
    # the board, whose deadman holds the arm where it is.
    def path(t):
        return HOME_MM + np.array([20.0, 0.0, 0.0]) * smooth_step((t - 0.2) / 1.5)
    write_jsonl(tmp_path / "s.jsonl", path_stream(path, 60.0))
    start = b.truth()["joint_angles_deg"]
    p = b.start("teleop", "--source", tmp_path / "s.jsonl", "--target", b.port)
    end = time.monotonic() + 90
    while max(abs(x - y) for x, y in zip(b.truth()["joint_angles_deg"], start)) < 3.0:
        assert time.monotonic() < end and p.poll() is None, (p.out.read_text(), p.err.read_text())
        time.sleep(0.2)
    _still(b)
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    time.sleep(0.5)                      # past the 200 ms deadman


def test_doctor_in_teleop_held_by_its_deadman_moves_nothing(tmp_path):
    with PlantBench(tmp_path, "nominal", 1, realtime=True) as b:
        b.wait_firmware()
        _teleop_session_killed(b, tmp_path)
        _doctor_keeps_the_world(b, "teleop_held", "job abort --port %s" % b.port)


# ---- every refusal names the way out ----

_COMMAND = re.compile(r"`(surepick [^`]+)`")


def _way_out_until_accepted(b, max_steps=6):
    # job start; while refused: the refusal must name a way out; do it as a person would (release
    # the e-stop in the plant when told to, wait for a rescue to end, else run the first command
    # it names that acts) and try again. -> the refusals seen.
    seen = []
    for _ in range(max_steps):
        r = b.run("job", "start", "--port", b.port)
        if r.returncode == 0:
            assert "job accepted" in r.stdout
            return seen
        text = r.stderr.strip()
        seen.append(text)
        assert "refused" in text and r.returncode == 1, text
        commands = [c for c in _COMMAND.findall(text) if not c.startswith("surepick job status")]
        if "rescue is moving the arm" in text:
            time.sleep(1.0)              # wait for it, as the refusal says
            continue
        assert commands, "a refusal without a command to run next: %s" % text
        if "release the e-stop" in text:
            b.plant.inject("estop", on=False)
            time.sleep(0.5)
        r = b.run(*commands[0].split()[1:], timeout=120)
        assert r.returncode == 0, "the way out %r failed: %s" % (commands[0], r.stdout + r.stderr)
        time.sleep(0.5)
    raise AssertionError("still refused after %d steps:\n%s" % (max_steps, "\n".join(seen)))


@pytest.mark.parametrize("case", ["estop_holding", "estop_idle", "interrupted_holding", "job_running"])
def test_every_job_refusal_names_a_command_that_leaves_the_state(tmp_path, case):
    scenario = {"estop_holding": "estop", "interrupted_holding": "brownout_mid_lift",
                "job_running": "part_missing"}.get(case, "nominal")
    with PlantBench(tmp_path, scenario, 1, realtime=case == "job_running") as b:
        b.wait_firmware()
        if case == "estop_idle":
            b.plant.inject("estop", on=True)
            _until(b, "fault ESTOP")
        elif case == "job_running":
            assert b.run("job", "start", "--port", b.port, "--attempts", "9").returncode == 0
        else:
            b.run("job", "start", "--port", b.port, "--wait")
            _until(b, "fault ESTOP" if case == "estop_holding" else "fault INTERRUPTED")
            _still(b)
        seen = _way_out_until_accepted(b)
    assert seen, "the board in %s accepted a job at once" % case
    first = {"estop_holding": "the e-stop is pressed", "estop_idle": "the e-stop is pressed",
             "interrupted_holding": "the arm servos are unpowered", "job_running": "a job is running"}[case]
    assert first in seen[0], seen
    if case == "estop_holding":
        assert any("a part is held" in s and "job rescue --place" in s for s in seen), seen


def test_teleop_closed_leaves_a_state_job_status_names(tmp_path):
    with PlantBench(tmp_path, "nominal", 1, realtime=True) as b:
        b.wait_firmware()
        _teleop_session_killed(b, tmp_path)
        out = _until(b, "teleop_held:")
        assert "no setpoint came for 200 ms" in out, out
        assert _way_out_until_accepted(b), "a job was accepted while teleop held the arm"


# ---- interrupting a client is not interrupting the arm ----

def _job_interrupted(b, *extra):
    # `job start --wait` at the Pico's pace, Ctrl-C once the arm is on its way.
    p = b.start("job", "start", "--port", b.port, "--wait", *extra)
    end = time.monotonic() + 60
    while "IDLE>APPROACH" not in p.out.read_text():
        assert time.monotonic() < end and p.poll() is None, (p.out.read_text(), p.err.read_text())
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    assert p.wait(30) == 130
    return p.err.read_text()


def test_ctrl_c_on_job_start_wait_says_the_job_goes_on_and_how_to_stop_it(tmp_path):
    with PlantBench(tmp_path, "nominal", 2, realtime=True) as b:
        b.wait_firmware()
        err = _job_interrupted(b)
        assert "not the arm" in err and "the job goes on: a job is running (" in err, err
        assert "`surepick job abort --port %s`" % b.port in err, err
        status = b.run("job", "status", "--port", b.port).stdout
        assert "job:" in status and "fault none" in status, status       # it does go on
        r = b.run("job", "abort", "--port", b.port)                         # and the named command stops it
        assert r.returncode == 0 and "fault ABORTED" in b.run("job", "status", "--port", b.port).stdout
        b.run("job", "clear", "--port", b.port)
        _still(b)
        err = _job_interrupted(b, "--abort-on-interrupt")
        assert "was aborted on the board" in err and "ABORTED is latched" in err, err
        time.sleep(1.0)
        before = b.truth()["joint_angles_deg"]
        time.sleep(1.0)
        assert "fault ABORTED" in b.run("job", "status", "--port", b.port).stdout
        assert np.abs(np.subtract(b.truth()["joint_angles_deg"], before)).max() < 0.5    # the arm holds


def test_a_teleop_session_ended_by_ctrl_c_or_a_closed_terminal_leaves_teleop(tmp_path):
    def path(t):
        return HOME_MM + np.array([15.0, 0.0, 0.0]) * smooth_step((t - 0.2) / 1.0)
    write_jsonl(tmp_path / "s.jsonl", path_stream(path, 60.0))
    with PlantBench(tmp_path, "nominal", 1, realtime=True) as b:
        b.wait_firmware()
        for sig in (signal.SIGINT, signal.SIGHUP):
            start = b.truth()["joint_angles_deg"]
            p = b.start("teleop", "--source", tmp_path / "s.jsonl", "--target", b.port)
            end = time.monotonic() + 90
            while max(abs(x - y) for x, y in zip(b.truth()["joint_angles_deg"], start)) < 2.0:
                assert time.monotonic() < end and p.poll() is None, (p.out.read_text(), p.err.read_text())
                time.sleep(0.2)
            p.send_signal(sig)
            p.wait(30)
            if sig == signal.SIGINT:
                assert "teleop mode left on the board: the arm holds where it stands" in p.err.read_text()
            status = b.run("job", "status", "--port", b.port).stdout
            assert "teleop" not in status, status
            _still(b)
        assert b.run("job", "start", "--port", b.port).returncode == 0        # nothing left holding the board


# ---- the virtual boards behave like a Pico at the edges ----

def test_reset_world_is_refused_while_the_firmware_holds_a_part(tmp_path):
    with PlantBench(tmp_path, "estop", 1) as b:
        b.wait_firmware()
        b.run("job", "start", "--port", b.port, "--wait")
        _until(b, "fault ESTOP")
        before = _still(b)
        r = b.run("board", "--reset-world", "--port", b.port)
        assert r.returncode == 1 and "the world was not reset" in r.stderr, r.stdout + r.stderr
        assert "a part is held" in r.stderr and "job rescue --place --port %s" % b.port in r.stderr, r.stderr
        after = b.truth()
        assert after["finger_contact"] and np.allclose(after["part_pos_mm"], before["part_pos_mm"], atol=1.0)
        b.plant.inject("estop", on=False)                 # the person releases the e-stop
        time.sleep(0.5)
        assert b.run("job", "rescue", "--place", "--wait", "--port", b.port).returncode == 0
        r = b.run("board", "--reset-world", "--port", b.port)
        assert r.returncode == 0 and "world reset" in r.stdout, r.stdout + r.stderr


def _options_of(*verb):
    return set(re.findall(r"--[a-z][a-z0-9-]*", surepick(*verb, "--help").stdout))


def test_the_emulated_boards_hints_name_options_that_exist(tmp_path):
    # Without ../shared the bootrom is missing: the way out names a setting that exists.
    uf2 = tmp_path / "image.uf2"
    uf2.write_bytes(b"\0" * 512)
    env = dict(os.environ, SUREPICK_RP2040_BOOTROM=str(tmp_path / "no-bootrom.bin"))
    r = surepick("board", "--engine", "rp2040", "--bare", "--uf2", uf2, env=env)
    assert r.returncode != 0 and "bootrom" in r.stderr and "Traceback" not in r.stderr, r.stderr
    named = set(re.findall(r"--[a-z][a-z0-9-]*", r.stderr))
    assert named <= _options_of("board"), (named - _options_of("board"), r.stderr)
    assert "SUREPICK_RP2040_BOOTROM" in r.stderr


@pytest.mark.slow
def test_the_emulated_board_says_serving_once_its_firmware_answers(tmp_path):
    from tests.support.rp2040 import chip_image
    chip_image()                              # skips (or fails under CI) without the RP2040 image
    env = bench_env(tmp_path)
    p = subprocess.Popen([SUREPICK_BIN, "board", "--engine", "rp2040", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = wait_served(p, 300, log=p.stderr.read)
        r = subprocess.run([SUREPICK_BIN, "job", "status", "--port", port], capture_output=True, text=True,
                           env=env, timeout=60)             # the first tool to connect finds the firmware
        assert r.returncode == 0 and r.stdout.startswith("state "), r.stdout + r.stderr
    finally:
        p.terminate()
        p.communicate(timeout=60)
        shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)
