# The emulated RP2040 (the real MicroPython RP2040 image in rp2040js) seen from the outside: real
# mpremote over a real socket and pty, the plant side channel, flash that persists. Each test
# boots its own chip (about 0.1 s emulated, under 2 s on the host). Under CI=true a missing
# firmware image is a failure, not a skip.
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial

from surepick.host.engines.rp2040 import Chip, EmulatorError, FirmwareMissing
from surepick.host.engines.rp2040.chip import EMULATOR, NODE_DIR, find_bootrom, find_node

from tests.support.rp2040 import chip_image

from tests.conftest import REPO
BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"


@pytest.fixture(scope="module")
def uf2():
    return chip_image()


def start(uf2, **kw):
    return Chip(uf2, **kw).start()


@pytest.fixture
def chip(uf2):
    c = start(uf2)
    yield c
    c.close()


def mpremote(address, *args, timeout=60, check=True):
    proc = subprocess.run([MPREMOTE, "connect", address, *args], capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, "mpremote %s failed:\n%s\n%s" % (" ".join(args), proc.stdout,
                                                                       proc.stderr)
    return proc.stdout.replace("\r\n", "\n")


def test_missing_uf2_names_the_option_and_the_variable(tmp_path, monkeypatch):
    missing = tmp_path / "nope.uf2"
    with pytest.raises(FirmwareMissing) as e:
        Chip(missing)
    msg = str(e.value)
    assert "\n" not in msg and str(missing) in msg
    assert "--uf2" in msg and "SUREPICK_RP2040_UF2" in msg
    monkeypatch.setenv("SUREPICK_RP2040_UF2", str(missing))
    proc = subprocess.run([sys.executable, "-m", "surepick.host.engines.rp2040"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--uf2" in lines[0] and "SUREPICK_RP2040_UF2" in lines[0]


@pytest.mark.parametrize("kind", ["tcp", pytest.param("pty", marks=pytest.mark.slow)])
def test_boots_and_mpremote_execs(uf2, kind):
    with start(uf2, pty=(kind == "pty")) as c:
        assert c.address.startswith("/dev/pts/" if kind == "pty" else "socket://127.0.0.1:")
        stats = c.stats()
        assert 0 < stats["usb_connected_at_ms"] < 1000  # emulated boot to an enumerated USB port
        assert mpremote(c.address, "exec", "print(1+1)").strip() == "2"
        out = mpremote(c.address, "exec", "import sys; print(sys.implementation._machine)")
        assert "Raspberry Pi Pico with RP2040" in out


@pytest.mark.slow
def test_files_persist_in_flash(uf2, tmp_path):
    # fs cp / ls / cat, a soft reset, and a new engine started from the saved flash image.
    src = tmp_path / "note.txt"
    payload = "".join("line %03d of a file that spans more than one flash page\n" % i for i in range(80))
    src.write_text(payload)
    image = tmp_path / "flash.bin"
    with start(uf2, save_flash=image) as c:
        before = c.stats()["flash"]
        mpremote(c.address, "fs", "cp", str(src), ":note.txt")
        assert "note.txt" in mpremote(c.address, "fs", "ls")
        assert mpremote(c.address, "fs", "cat", ":note.txt") == payload
        after = c.stats()["flash"]
        assert after["erases"] > before["erases"] and after["programBytes"] >= len(payload)
        assert after["busyNs"] > before["busyNs"]  # erase/program time was charged to the chip
        out = mpremote(c.address, "soft-reset", "exec", "import os; print(os.stat('note.txt')[6])")
        assert out.strip() == str(len(payload))
    assert image.stat().st_size == 2 * 1024 * 1024
    with start(uf2, flash=image) as c:
        assert mpremote(c.address, "fs", "cat", ":note.txt") == payload


@pytest.mark.slow
def test_pin_levels_and_adc_from_the_side_channel(chip):
    read = ("import machine\n"
            "P = machine.Pin\n"
            "print([P(n, P.IN, P.PULL_UP).value() for n in (13, 14, 15)],"
            " [machine.ADC(26 + i).read_u16() for i in range(3)])")
    chip.set(pins={13: 0, 14: 1, 15: 0}, adc={0: 2000, 1: 0, 2: 4095})
    assert mpremote(chip.address, "exec", read).strip() == "[0, 1, 0] [32007, 0, 65535]"
    chip.set(pins={13: None, 14: 0, 15: None}, adc={0: 1234, 1: 4000, 2: 17})
    # released pins read their pull-ups; read_u16 is the firmware's c << 4 | c >> 8
    expect = [c << 4 | c >> 8 for c in (1234, 4000, 17)]
    assert mpremote(chip.address, "exec", read).strip() == "[1, 0, 1] %s" % expect
    # without a pull a released pin floats; the engine reads it as low
    assert mpremote(chip.address, "exec",
                    "import machine; print(machine.Pin(15, machine.Pin.IN).value())").strip() == "0"


@pytest.mark.slow
def test_pwm_pulse_reported_on_the_side_channel(chip):
    assert chip.pwm()["pulse_us"] == {p: None for p in (2, 3, 4, 5, 6)}  # no PWM yet
    mpremote(chip.address, "exec",
             "import machine\n"
             "a = machine.PWM(machine.Pin(2), freq=50, duty_ns=1500000)\n"
             "b = machine.PWM(machine.Pin(5), freq=50, duty_ns=1000000)\n")
    st = chip.state()
    assert st["pulse_us"][2] == pytest.approx(1500, abs=0.5)
    assert st["pulse_us"][5] == pytest.approx(1000, abs=0.5)
    assert st["period_us"][2] == pytest.approx(20000, abs=1)
    assert st["pulse_us"][3] is None and st["pulse_us"][4] is None and st["pulse_us"][6] is None
    # the chip changes the duty: the side channel follows
    mpremote(chip.address, "exec",
             "import machine; machine.PWM(machine.Pin(2), freq=50, duty_ns=2100000)")
    assert chip.pwm([2])["pulse_us"] == {2: pytest.approx(2100, abs=0.5)}


@pytest.mark.slow
def test_lockstep_runs_exactly_what_the_plant_asks(chip):
    # A timer on the chip toggles GP7 every 10 ms; in lockstep the pin changes only as the plant
    # advances time, once per 10 ms step, and the chip's clock moves by exactly the steps.
    mpremote(chip.address, "exec", "--no-follow",
             "import machine\n"
             "led = machine.Pin(7, machine.Pin.OUT)\n"
             "t = machine.Timer(period=10, callback=lambda t: led.toggle())\n")
    time.sleep(0.5)
    t0 = chip.lockstep(True)["t_us"]  # the plant's clock, from the chip's (next whole us)
    frozen = chip.state()["t_us"]
    time.sleep(0.3)
    assert t0 - 1 <= chip.state()["t_us"] == frozen <= t0  # nothing runs between steps
    levels, times = [], []
    for _ in range(12):
        st = chip.run(ms=10)
        levels.append(st["gpio_level"] >> 7 & 1)
        times.append(st["t_us"])
    assert [b - a for a, b in zip([t0] + times, times)] == [10000] * 12
    assert all(a != b for a, b in zip(levels, levels[1:])), levels
    for _ in range(500):  # 2 ms steps with inputs, as the plant will send them
        st = chip.run(ms=2, pins={14: 0}, adc={0: 1000})
    assert st["t_us"] == t0 + 120000 + 1000000
    chip.lockstep(False)
    assert mpremote(chip.address, "exec",
                    "import machine; print(machine.Pin(14).value(), machine.ADC(26).read_u16())"
                    ).strip() == "0 %d" % (1000 << 4 | 1000 >> 8)


@pytest.mark.slow
def test_ctrl_c_interrupts_a_busy_loop(chip):
    ser = serial.serial_for_url(chip.address, timeout=0.1)
    try:
        ser.write(b"\r\x03")
        ser.write(b"n = 0\r")
        # it says so once it is well into its loop: wait for that, not for a second of wall time
        ser.write(b"while True: n += 1; n == 1001 and print('LOOP' + 'ING')\r\r")
        seen = b""
        deadline = time.monotonic() + 60
        while b"LOOPING" not in seen:
            assert time.monotonic() < deadline, seen
            seen += ser.read(1000)
        ser.write(b"\x03")
        seen = b""
        deadline = time.monotonic() + 30
        while b"KeyboardInterrupt" not in seen or not seen.endswith(b">>> "):
            assert time.monotonic() < deadline, seen
            seen += ser.read(1000)
        ser.write(b"print(n > 1000)\r")
        seen = b""
        while b"\r\n>>> " not in seen:
            assert time.monotonic() < deadline, seen
            seen += ser.read(1000)
        assert b"True" in seen
    finally:
        ser.close()


@pytest.mark.slow
def test_watchdog_resets_the_chip_and_hangs_up(chip):
    mpremote(chip.address, "exec", "import machine; w = machine.WDT(timeout=100)")
    deadline = time.monotonic() + 30
    while chip.state()["resets"] < 1:
        assert time.monotonic() < deadline, chip.log_tail()
        time.sleep(0.1)
    out = mpremote(chip.address, "exec", "import machine; print(machine.reset_cause() == machine.WDT_RESET)")
    assert out.strip() == "True"
    assert chip.stats()["halted"] is None


@pytest.mark.slow
def test_bench_tiny(uf2, tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "rp2040_emu.py"), "--tiny",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(out.read_text())
    assert res["busy"]["host_cpu_s_per_emulated_s"] > 0
    assert res["idle"]["host_cpu_s_per_emulated_s"] < res["busy"]["host_cpu_s_per_emulated_s"]
    assert 0 < res["boot"]["usb_emulated_ms"] < 1000


@pytest.mark.slow
@pytest.mark.parametrize("ci", ["true", None])
def test_missing_image_fails_under_ci_and_skips_elsewhere(tmp_path, ci):
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env["SUREPICK_RP2040_UF2"] = str(tmp_path / "absent.uf2")
    if ci:
        env["CI"] = ci
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-k", "boots_and_mpremote", str(Path(__file__))],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO), env=env)
    if ci:
        assert proc.returncode == 1, proc.stdout
        assert "CI must run the rp2040 engine" in proc.stdout and "2 errors" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout
        assert "2 skipped" in proc.stdout


@pytest.mark.slow
def test_bootrom_as_a_raw_image_and_a_wrong_one(uf2, tmp_path):
    text = find_bootrom().read_text()
    words = [int(h, 16) for h in re.findall(r"0x[0-9a-fA-F]+", text[text.index("Uint32Array(["):])]
    assert len(words) == 4096
    raw = tmp_path / "b1.bin"
    raw.write_bytes(b"".join(w.to_bytes(4, "little") for w in words))
    with start(uf2, bootrom=raw) as c:
        assert c.ready["rom_erase"] == 0x237c and c.ready["rom_program"] == 0x23c4  # B1's entries
        assert mpremote(c.address, "exec", "print(6*7)").strip() == "42"
    wrong = tmp_path / "zeros.bin"
    wrong.write_bytes(bytes(16384))
    with pytest.raises(EmulatorError, match="no RP2040 ROM header"):
        start(uf2, bootrom=wrong)


@pytest.mark.slow
def test_side_channel_on_a_tcp_port(uf2):
    # node emulator.mjs --control HOST:PORT: the same protocol on a socket instead of stdin/stdout
    proc = subprocess.Popen([find_node(), str(EMULATOR), "--uf2", str(uf2), "--bootrom", str(find_bootrom()),
                             "--control", "127.0.0.1:0", "--lockstep", "--quiet"],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=str(NODE_DIR))
    try:
        ready = json.loads(proc.stdout.readline())
        host, port = ready["control"].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as s:
            f = s.makefile("rw")
            for req in ({"op": "hello", "id": 1}, {"op": "run", "ms": 300, "id": 2}, {"op": "bogus"}):
                f.write(json.dumps(req) + "\n")
            f.flush()
            hello, step, bad = (json.loads(f.readline()) for _ in range(3))
        assert hello["ok"] and hello["protocol"] == 1 and hello["lockstep"] and hello["id"] == 1
        assert step["ok"] and step["t_us"] == 300000 and step["usb"] and step["id"] == 2
        assert bad == {"ok": False, "error": 'unknown op "bogus"'}
    finally:
        proc.terminate()
        proc.wait(30)
