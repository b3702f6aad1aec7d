# A day at the bench in tests: the virtual board (`surepick board`, the real firmware under the
# real micropython, wired to the MuJoCo plant) and the `surepick` verbs around it, each in its own
# process, all with one private runtime directory (so the link hubs and the board registry they
# see are this test's only).
import os
import shutil
import subprocess
import tempfile
import time

from surepick.host.cli.board_ready import wait_served
from tests.support.cli import SUREPICK_BIN
from tests.support.vboard import deploy_firmware


def short_runtime_dir():
    # A private runtime directory short enough for Unix socket paths (pytest's tmp_path is not)
    return tempfile.mkdtemp(prefix="sp-run-", dir="/tmp")


def bench_env(tmp_path):
    # Not the terminal size of whatever started the tests (pytest-xdist sets COLUMNS/LINES): a
    # live view in tmux must size itself from its own terminal.
    env = {k: v for k, v in os.environ.items() if k not in ("SUREPICK_PORT", "SUREPICK_HUB", "COLUMNS", "LINES")}
    env.update(XDG_RUNTIME_DIR=short_runtime_dir(), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_STATE_HOME=str(tmp_path / "state"), PYTHONUNBUFFERED="1")
    return env


def end_procs(procs):
    # The verbs a test left running: terminated, killed after 15 s.
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Bench:
    def __init__(self, tmp_path, scenario="nominal", seed=2, flash=None, firmware=True, realtime=False):
        self.tmp = tmp_path
        self.env = bench_env(tmp_path)
        self.flash = flash or tmp_path / "flash"
        self.flash.mkdir(exist_ok=True)
        if firmware:
            deploy_firmware(self.flash)
        self.log = open(tmp_path / "board.log", "w")
        plant = ["--scenario", scenario, "--seed", str(seed)] if scenario else []
        if realtime:
            plant.append("--realtime")      # the arm at its true pace: a person's keys land mid-cycle
        self.board = subprocess.Popen([SUREPICK_BIN, "board", "--listen", "127.0.0.1:0", "--flash", str(self.flash)]
                                      + plant,
                                      stdout=subprocess.PIPE, stderr=self.log, text=True, env=self.env)
        self.port = wait_served(self.board, 30, log=self.board_log)
        self.procs = []

    def board_log(self):
        return (self.tmp / "board.log").read_text()[-3000:]

    def run(self, *args, timeout=120, **kw):
        return subprocess.run([SUREPICK_BIN, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, env=kw.pop("env", self.env), **kw)

    def start(self, *args, **kw):
        # A verb left running (monitor, job start --wait): stdout and stderr to files.
        n = len(self.procs)
        out, err = self.tmp / ("p%d.out" % n), self.tmp / ("p%d.err" % n)
        p = subprocess.Popen([SUREPICK_BIN, *map(str, args)], stdout=open(out, "w"), stderr=open(err, "w"),
                             text=True, env=kw.pop("env", self.env), **kw)
        p.out, p.err = out, err
        self.procs.append(p)
        return p

    def wait_firmware(self, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = self.run("job", "status", "--port", self.port, timeout=30)
            if r.returncode == 0:
                return r
            time.sleep(0.3)
        raise AssertionError("the firmware never answered: %s" % self.board_log())

    def close(self):
        end_procs(self.procs)
        self.board.terminate()
        try:
            self.board.wait(20)
        except subprocess.TimeoutExpired:
            self.board.kill()
            self.board.wait()
        self.log.close()
        shutil.rmtree(self.env["XDG_RUNTIME_DIR"], ignore_errors=True)


def text_of(path):
    return path.read_text(errors="replace")


def wait_for_text(path, needle, timeout, proc=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        t = text_of(path)
        if (needle.search(t) if hasattr(needle, "search") else needle in t):
            return t
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError("%r never appeared in %s:\n%s" % (needle, path.name, text_of(path)[-3000:]))


class PlantBench:
    """The virtual board in this process, so a test reads its MuJoCo plant (the judge's ground
    truth: what really moved, the gripper's real current, how often the board really booted),
    with the `surepick` verbs around it in their own processes, as a user runs them, sharing one
    private runtime directory. `with PlantBench(tmp_path, "estop", 1) as b: b.run("job", ...)`."""

    def __init__(self, tmp_path, scenario="nominal", seed=2, realtime=False):
        from surepick.host.engines.vboard_world import board_in_world
        self.tmp = tmp_path
        self.env = bench_env(tmp_path)
        flash = tmp_path / "flash"
        flash.mkdir(exist_ok=True)
        deploy_firmware(flash)
        saved = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.env["XDG_RUNTIME_DIR"]   # its registry entry: --reset-world finds it
        try:
            self.board = board_in_world(flash, scenario, seed, realtime=realtime).start()
        finally:
            if saved is None:
                os.environ.pop("XDG_RUNTIME_DIR", None)
            else:
                os.environ["XDG_RUNTIME_DIR"] = saved
        self.plant = self.board.world_service
        self.port = self.board.address
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    run = Bench.run
    start = Bench.start
    wait_firmware = Bench.wait_firmware

    def board_log(self):
        return self.board.transcript()[-3000:].decode("utf-8", "replace")

    def truth(self):
        # What the plant is doing now (sim/plant.py truth(): the joints, the jaw opening, the
        # gripper's current from its servo model, the servos' power, the part's pose).
        return self.plant.truth()

    def close(self):
        end_procs(self.procs)
        self.board.close()
        subprocess.run([SUREPICK_BIN, "link", "stop", "--port", self.port], capture_output=True, env=self.env,
                       timeout=30)
        shutil.rmtree(self.env["XDG_RUNTIME_DIR"], ignore_errors=True)
