# The issue's "the same bring-up against the emulated RP2040 (--engine rp2040) gets through the
# input checks": the real MicroPython RPI_PICO image with the firmware in rp2040js, wired to the
# reference world, served with the same bench control channel as the virtual board
# (vboard/bench.py); `bringup --operator sim` presses and releases its e-stop, its finger switch,
# blocks its beam, reads its pot, current zero and rail, as on the stand-in bench.
import json
import shutil
import subprocess

import pytest

from surepick.host.cli.board_ready import wait_served
from tests.support.cli import SUREPICK_BIN, surepick

INPUTS = ("estop", "switch", "beam", "sensors", "rail")


@pytest.mark.slow
def test_bringup_gets_through_the_input_checks_on_the_emulated_rp2040(tmp_path):
    from tests.support.bench import bench_env
    from tests.support.rp2040 import chip_image
    chip_image()                              # skips (or fails under CI) without the RP2040 image
    env = bench_env(tmp_path)
    p = subprocess.Popen([SUREPICK_BIN, "board", "--engine", "rp2040", "--scenario", "nominal",
                          "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        port = wait_served(p, 600, log=p.stderr.read)
        out = tmp_path / "out"
        listed = surepick("bringup", "--port", port, "--list", "--out", out, env=env).stdout.split()[::2]
        skip = [a for n in listed if n not in INPUTS for a in ("--skip", n)]
        r = surepick("bringup", "--port", port, "--operator", "sim", "--out", out, *skip, env=env, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        steps = json.loads((out / "bringup-state.json").read_text())["steps"]
        for name in INPUTS:
            assert name in steps and not steps[name].get("skipped"), (name, steps.get(name))
        assert steps["estop"] == {"open_read": True, "closed_read": True}
        assert steps["switch"] == {"on_read": True, "off_read": True} == steps["beam"]
        # the chip's rail reading (its ADC through the divider) against the bench's multimeter
        assert abs(steps["rail"]["board_v"] - steps["rail"]["meter_v"]) <= 0.05 * steps["rail"]["meter_v"]
    finally:
        p.terminate()
        p.communicate(timeout=60)
        shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)
