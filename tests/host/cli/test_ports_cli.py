# Ports through the real CLI: the default port from $SUREPICK_PORT or the config file (a verb
# without --port talks to that board), near-miss port strings get their hint (exit 2, one line),
# a missing device lists what is there, and `auto` finds a running virtual board.
import os
import re
import subprocess

import pytest

from surepick.host.cli.board_ready import wait_served
from surepick.host.link.ports import find_pico_ports, near_miss
from tests.support.cli import surepick
from tests.support.monitor import free_port, start_board


def clean_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("SUREPICK_PORT", "SUREPICK_HUB")}
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    env.update(XDG_RUNTIME_DIR=str(run), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.update(extra)
    return env


@pytest.fixture
def standin(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    port = free_port()
    b = start_board(flash, port, "--name-in-ping")
    yield "socket://127.0.0.1:%d" % port
    b.kill()
    b.wait()


def test_no_port_takes_surepick_port(tmp_path, standin):
    r = surepick("config", "get", "telemetry_hz", env=clean_env(tmp_path, SUREPICK_PORT=standin))
    assert r.returncode == 0 and r.stdout.strip() == "telemetry_hz = 10 Hz", r.stdout + r.stderr
    # --port still wins over the variable
    r = surepick("config", "get", "telemetry_hz", "--port", "socket://127.0.0.1:1",
                 env=clean_env(tmp_path, SUREPICK_PORT=standin))
    assert r.returncode == 1 and "no board on socket://127.0.0.1:1" in r.stderr


def test_no_port_takes_the_config_file(tmp_path, standin):
    env = clean_env(tmp_path)
    conf = tmp_path / "config" / "surepick"
    conf.mkdir(parents=True)
    (conf / "config.toml").write_text('# my bench\nport = "%s"\n' % standin)
    r = surepick("job", "status", env=env)
    assert r.returncode == 0 and r.stdout.startswith("state "), r.stdout + r.stderr
    (conf / "config.toml").write_text("port = 5\n")
    r = surepick("job", "status", env=env)
    assert r.returncode == 2 and "`port` in %s must be a non-empty string" % (conf / "config.toml") in r.stderr
    (conf / "config.toml").write_text("port = [")
    r = surepick("job", "status", env=env)
    assert r.returncode == 2 and "cannot read the config file" in r.stderr


@pytest.mark.parametrize("given,hint", [
    ("localhost:39913", "did you mean socket://localhost:39913?"),
    ("127.0.0.1:39913", "did you mean socket://127.0.0.1:39913?"),
    ("39913", "did you mean socket://127.0.0.1:39913?"),
    ("tcp://localhost:39913", "did you mean socket://localhost:39913?"),
    ("socket://localhost", "a socket:// port is socket://HOST:PORT"),
    ("COM3", "COM ports are Windows names"),
])
def test_a_near_miss_port_gets_a_hint(tmp_path, given, hint):
    r = surepick("job", "status", "--port", given, env=clean_env(tmp_path))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    assert r.stderr.startswith("surepick job status: --port %r is not a port: " % given) and hint in r.stderr


def test_the_hint_comes_from_the_default_too(tmp_path):
    r = surepick("job", "status", env=clean_env(tmp_path, SUREPICK_PORT="localhost:39913"))
    assert r.returncode == 2 and "(from $SUREPICK_PORT)" in r.stderr and "socket://localhost:39913" in r.stderr


def test_real_ports_get_no_hint():
    for port in ("/dev/ttyACM0", "socket://127.0.0.1:5000", "socket://[::1]:5000", "auto", "rfc2217://h:7"):
        assert near_miss(port) is None, port


def test_a_missing_device_lists_what_is_there(tmp_path, standin):
    r = surepick("job", "status", "--port", "/dev/ttyACM97", env=clean_env(tmp_path))
    assert r.returncode == 1
    assert r.stderr.startswith("surepick job status: no board on /dev/ttyACM97: the device does not exist; ")
    assert re.search(r"; (present: |none is present)", r.stderr), r.stderr


@pytest.mark.skipif(bool(find_pico_ports()), reason="a Pico is plugged in: `auto` would find it too")
def test_auto_finds_the_running_virtual_board(tmp_path):
    from tests.support.bench import Bench
    from tests.support.cli import SUREPICK_BIN
    b = Bench(tmp_path, scenario=None, firmware=False)
    other = None
    try:
        # No --port at all: the default is auto, which finds the one board running.
        r = b.run("link", "mpremote", "--", "exec", "print('on', 6 * 7)", timeout=60)
        assert r.returncode == 0 and r.stdout.strip().endswith("on 42"), r.stdout + r.stderr
        r = b.run("doctor", "--port", "auto", timeout=90)
        assert r.stdout.startswith("surepick doctor: %s\n" % b.port), r.stdout + r.stderr
        # A missing device names the running board among what is there.
        r = b.run("job", "status", "--port", "/dev/ttyACM97")
        assert b.port in r.stderr and "virtual board" in r.stderr, r.stderr
        # Two boards: auto asks to choose, naming both.
        flash2 = tmp_path / "flash2"
        flash2.mkdir()
        other = subprocess.Popen([SUREPICK_BIN, "board", "--flash", str(flash2)], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env=b.env)
        port2 = wait_served(other, 60, scheme="")
        r = b.run("job", "status")
        assert r.returncode == 1 and "several boards found, choose one with --port" in r.stderr, r.stderr
        assert b.port in r.stderr and port2 in r.stderr
    finally:
        if other is not None:
            other.terminate()
            other.wait(20)
        b.close()


@pytest.mark.slow
@pytest.mark.skipif(bool(find_pico_ports()), reason="a Pico is plugged in: `auto` would find it too")
def test_auto_finds_an_emulated_rp2040(tmp_path):
    # The real MicroPython RP2040 image in rp2040js (engines/rp2040) lists itself like a virtual
    # board: a verb without --port finds it.
    import sys

    from surepick.host.engines.rp2040 import EmulatorError, find_uf2
    from surepick.host.engines.rp2040.chip import check_node_modules, find_node
    from tests.support.bench import bench_env
    try:
        find_uf2()
        find_node()
        check_node_modules()
    except EmulatorError as e:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the rp2040 engine: %s" % e, pytrace=False)
        pytest.skip(str(e))
    env = bench_env(tmp_path)
    chip = subprocess.Popen([sys.executable, "-m", "surepick.host.engines.rp2040"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        address = wait_served(chip, 300, scheme="")
        r = surepick("link", "mpremote", "--", "exec", "import sys; print(sys.platform, 6 * 7)", env=env, timeout=120)
        assert r.returncode == 0 and r.stdout.strip().endswith("rp2 42"), r.stdout + r.stderr
        assert "on the hub's raw console" in r.stderr                  # auto -> the chip, through a hub
        r = surepick("link", "status", "--port", address, env=env)
        assert address in r.stdout or r.stdout.startswith("no link hub")   # the hub may have ended
    finally:
        chip.terminate()
        chip.wait(30)
