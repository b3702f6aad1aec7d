# A working day on one virtual board: `surepick board` with the nominal scenario, then job, reset
# the world (`surepick board --reset-world --port ...`: the part back on its pad), job again; both
# jobs placed as the firmware reports it and as the world service's judge measures it (each world
# has its own judge, so the second verdict is about the second part). All through the CLI as a
# user runs it; the judge's verdicts come over the board's control channel.
import os
import select
import subprocess
import sys
import time

import pytest

from surepick.host.engines.world_service import WorldService
from tests.support.vboard import deploy_firmware
from surepick.host.vboard import VirtualBoard, control

from tests.support.bench import bench_env
from tests.support.held_plant import HeldWhileBusy
from tests.support.needs import NEEDS_MICROPYTHON

SUREPICK = [sys.executable, "-m", "surepick.host.cli.main"]

pytestmark = NEEDS_MICROPYTHON


class Board:
    # `surepick board ...` as a subprocess: the addresses it prints, stopped with SIGTERM.
    def __init__(self, *args):
        self.proc = subprocess.Popen(SUREPICK + ["board", "--quiet", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out = b""
            while out.count(b"\n") < 2:         # the TCP address, then the pty
                ready, _, _ = select.select([self.proc.stdout], [], [], 60)
                assert ready, "surepick board printed no address: %r" % self.proc.stderr.read1(4000)
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                assert chunk, "surepick board ended: %r" % self.proc.stderr.read()
                out += chunk
        except BaseException:
            self.stop(check=False)
            raise
        lines = out.decode().splitlines()
        assert all(line.startswith("surepick-board: serving on ") for line in lines), lines
        self.addresses = [line.split()[-1] for line in lines]
        self.port = self.addresses[0]

    def status(self):
        return control.request(control.find_board(self.port)["control"], "status")

    def stop(self, check=True):
        self.proc.terminate()
        try:
            rc = self.proc.wait(30)
            assert rc == 0 or not check, rc
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def cli(*args, timeout=300, env=None):
    return subprocess.run(SUREPICK + list(args), capture_output=True, text=True, timeout=timeout, env=env)


def judged(board, world, timeout=120):
    # The plant's judge sees "placed" once the part has rested in the bin for a second of plant
    # time; the board keeps running in lockstep, so that comes without anyone sending anything.
    end = time.monotonic() + timeout
    while True:
        s = board.status()
        assert s["world"] == world, s
        if s["verdict"][0] == "placed" or time.monotonic() > end:
            return s["verdict"]
        time.sleep(0.2)


@pytest.fixture
def flash(tmp_path):
    d = tmp_path / "flash"
    d.mkdir()
    deploy_firmware(d)
    return d


def test_two_nominal_jobs_in_a_row_on_one_board(flash):
    b = Board("--flash", str(flash), "--scenario", "nominal", "--seed", "5")
    try:
        assert b.port.startswith("socket://127.0.0.1:") and b.addresses[1].startswith("/dev/")
        r = cli("job", "start", "--port", b.port, "--wait")
        assert r.returncode == 0 and "cycle ended: placed" in r.stdout, (r.stdout, r.stderr)
        first = judged(b, 0)
        assert first[0] == "placed", first
        boots = b.status()["boot_count"]

        r = cli("board", "--reset-world", "--port", b.port)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert r.stdout.startswith("world reset: world 1 of scenario nominal is ready "
                                   "(the previous world, as judged: placed"), r.stdout
        s = b.status()
        assert s["world"] == 1 and s["verdict"][0] != "placed"   # a new judge, nothing placed yet
        assert s["boot_count"] == boots                          # the board was not reset

        r = cli("job", "start", "--port", b.port, "--wait")
        assert r.returncode == 0 and "cycle ended: placed" in r.stdout, (r.stdout, r.stderr)
        second = judged(b, 1)
        assert second[0] == "placed", second
    finally:
        b.stop()


def test_the_world_is_not_reset_under_a_moving_arm(flash):
    # A board in this process whose virtual time waits on the console while the job runs
    # (tests/support/held_plant.py): the arm is moving when the test asks, however fast the host.
    ps = HeldWhileBusy("nominal", seed=6)
    with VirtualBoard(flash, world_service=ps, scenario="nominal", seed=6) as b:
        r = cli("job", "start", "--port", b.address)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert ps.busy.wait(60), "the machine never left IDLE"
        r = cli("board", "--reset-world", "--port", b.address)
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "the world was not reset: the arm is busy (state " in r.stderr, r.stderr
        assert ps.cycle == 0 and b.status()["world"] == 0


def test_reset_world_needs_a_running_board_with_a_plant(tmp_path):
    r = cli("board", "--reset-world", "--port", "socket://127.0.0.1:9")
    assert r.returncode == 2 and "no virtual board is serving socket://127.0.0.1:9" in r.stderr, r.stderr
    # No --port: the default, as for every verb (auto: the one board running; none here)
    r = cli("board", "--reset-world", env=bench_env(tmp_path))
    assert r.returncode == 1 and "no virtual board running" in r.stderr, r.stderr
    r = cli("board", "--port", "socket://127.0.0.1:9")
    assert r.returncode == 2 and "--port is for --reset-world" in r.stderr, r.stderr
    flash = tmp_path / "bare"
    flash.mkdir()
    b = Board("--flash", str(flash))
    try:
        r = cli("board", "--reset-world", "--port", b.addresses[1])      # found by its pty too
        assert r.returncode == 1 and "has no plant (start it with --scenario NAME)" in r.stderr, r.stderr
    finally:
        b.stop()
