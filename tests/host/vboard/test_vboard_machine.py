# What a first program on a Pico reaches for in `machine`, on the virtual board through real
# mpremote processes: Pin (the LED blink, inputs on the bench's wiring), ADC, PWM, unique_id, freq,
# reset_cause, reset. Reprs, constants and error messages are the rp2 port's, as the emulated
# RPI_PICO (MicroPython 1.28 in rp2040js) printed them. With a plant attached, the pins, ADC
# channels and servo PWM are the MuJoCo bench's, through the same socket the firmware's HAL uses.
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial

from surepick.host.engines.world_service import WorldService
from tests.support.vboard import deploy_firmware
from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link
from surepick.sim.plant import ADC_CURRENT, ADC_POT, ADC_RAIL, PIN_BEAM, PIN_ESTOP, PIN_SWITCH
from surepick.host.vboard import HARD, SOFT, VirtualBoard

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON


def mpremote(board, *args, timeout=60):
    p = subprocess.run([MPREMOTE, "connect", board.address, *args], capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (args, p.stdout, p.stderr, board.transcript()[-600:])
    return p.stdout


def exec_out(board, code, *pre):
    return mpremote(board, *pre, "exec", code).strip().splitlines()


def test_a_first_blink_program(board):
    out = exec_out(board, "\n".join([
        "from machine import Pin",
        "led = Pin(25, Pin.OUT)",
        "led.on(); a = led.value()",
        "led.off(); b = led.value()",
        "led.toggle(); c = led.value()",
        "led(0); d = led()",
        "print(a, b, c, d)",
        "print(Pin('LED', Pin.OUT), Pin(15, Pin.IN), Pin(14, Pin.IN, Pin.PULL_UP))",
        "print(Pin.IN, Pin.OUT, Pin.OPEN_DRAIN, Pin.PULL_UP, Pin.PULL_DOWN)",
        "try:\n Pin(30)\nexcept ValueError as e:\n print(repr(e))",
    ]))
    assert out == ["1 0 1 0",
                   "Pin(GPIO25, mode=OUT) Pin(GPIO15, mode=IN) Pin(GPIO14, mode=IN, pull=PULL_UP)",
                   "0 1 2 1 2",
                   "ValueError('invalid pin',)"]


def test_inputs_without_a_plant_are_an_idle_bench(board):
    # e-stop closed (LOW), switch released and beam clear (HIGH through their pull-ups); an
    # unwired pad reads its pull
    out = exec_out(board, "from machine import Pin\n"
                         "print([Pin(g, Pin.IN, Pin.PULL_UP).value() for g in (13, 14, 15, 16)],"
                         " Pin(17, Pin.IN, Pin.PULL_DOWN).value())")
    assert out == ["[0, 1, 1, 1] 0"]


def test_the_board_identity_and_clock(board, flash):
    out = exec_out(board, "\n".join([
        "import machine",
        "print(machine.unique_id().hex(), len(machine.unique_id()))",
        "print(machine.freq(), machine.reset_cause() == machine.PWRON_RESET,"
        " machine.PWRON_RESET, machine.WDT_RESET)",
        "print(machine.ADC(26), machine.ADC(machine.Pin(27)), machine.ADC(4))",
        "try:\n machine.ADC(25)\nexcept ValueError as e:\n print(repr(e))",
        "print(hasattr(machine, 'mem32'), hasattr(machine, 'Signal'))",     # the unix port's own
    ]))
    uid = json.loads((flash / ".vboard-chip").read_text())["unique_id"]
    assert out == ["%s 8" % uid,
                   "125000000 True 1 3",
                   "<ADC channel=0> <ADC channel=1> <ADC channel=4>",
                   "ValueError(\"Pin doesn't have ADC capabilities\",)",
                   "True True"]


def test_pwm_outputs_like_the_rp2(board):
    out = exec_out(board, "\n".join([
        "from machine import Pin, PWM",
        "p = PWM(Pin(3)); p.freq(50); p.duty_ns(1500000)",
        "print(p, p.freq(), p.duty_ns(), p.duty_u16())",
        "q = PWM(Pin(2), freq=50, duty_u16=32768)",
        "print(q, q.duty_ns())",
        "try:\n p.freq(1)\nexcept ValueError as e:\n print(repr(e))",
    ]))
    # 1.5 ms of a 20 ms period is 7.5% of 65536; half of 20 ms is 10 ms
    assert out == ["<PWM slice=1 channel=1 invert=0> 50 1500000 4915",
                   "<PWM slice=1 channel=0 invert=0> 10000000",
                   "ValueError('freq too small',)"]


def test_mpremote_reset_restarts_main_py_and_commands_leave_it_stopped_as_on_a_pico(flash):
    # mpremote 1.29 enters the raw REPL (Ctrl-C stops main.py, then a soft reset in raw mode,
    # which runs boot.py but not main.py) and on leaving only sends Ctrl-B: a Pico then sits in
    # its friendly REPL, main.py stopped. `mpremote reset` is machine.reset(): a hard reset, after
    # which main.py runs again.
    (flash / "main.py").write_text("f = open('runs.txt', 'a'); f.write('x'); f.close()\n"
                                   "import time\nwhile True:\n    time.sleep_ms(10)\n")
    with VirtualBoard(flash) as b:
        b.wait_booted(20)
        _wait(lambda: (flash / "runs.txt").exists())
        assert exec_out(b, "print(open('runs.txt').read())") == ["x"]
        boots = b.boot_count
        assert b.boot_kind == SOFT
        _wait(lambda: b.repl_mode == "friendly")            # mpremote's Ctrl-B on leaving
        assert exec_out(b, "print(open('runs.txt').read())", "resume") == ["x"]   # not again
        mpremote(b, "reset")
        b.wait_booted(20, boot=boots + 1)
        assert b.boot_kind == HARD
        _wait(lambda: (flash / "runs.txt").read_text() == "xx")
        assert exec_out(b, "import machine\nprint(machine.reset_cause() == machine.PWRON_RESET)",
                        "resume") == ["True"]
        # machine.soft_reset() typed at the friendly REPL: main.py runs again, as after Ctrl-D
        _wait(lambda: b.repl_mode == "friendly")
        boots = b.boot_count
        with serial.serial_for_url(b.address, timeout=0.1) as line:
            line.write(b"\r\x02")
            line.write(b"import machine; machine.soft_reset()\r")
            b.wait_booted(20, boot=boots + 1)
        assert b.boot_kind == SOFT
        _wait(lambda: (flash / "runs.txt").read_text() == "xxx")


def _wait(pred, timeout=20.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "condition not reached within %.0f s" % timeout
        time.sleep(0.02)


# -- with the MuJoCo bench ------------------------------------------------------------------------

@pytest.fixture
def board_in_world(flash):
    ps = WorldService("nominal", seed=2)
    with VirtualBoard(flash, world_service=ps, scenario="nominal", seed=2) as b:
        b.wait_repl(30)
        yield b, ps


READ_BENCH = ("from machine import Pin, ADC\n"
              "print([Pin(g, Pin.IN, Pin.PULL_UP).value() for g in (13, 14, 15)])\n"
              "print(ADC(26).read_u16(), ADC(27).read_u16(), ADC(28).read_u16())")


def test_pins_and_adc_read_the_plant(board_in_world):
    b, ps = board_in_world
    pins, adc = exec_out(b, READ_BENCH)
    pot, cur, rail = (int(v) for v in adc.split())
    with ps.lock:
        plant = ps.plant
        assert pins == str([int(plant.read_pin(g)) for g in (PIN_ESTOP, PIN_SWITCH, PIN_BEAM)])
        now = [plant.read_u16(ch) for ch in (ADC_POT, ADC_CURRENT, ADC_RAIL)]
    # the same bench a moment later, another noisy sample of each
    assert abs(pot - now[0]) < 400 and abs(cur - now[1]) < 400 and abs(rail - now[2]) < 400
    assert ps.exchanges > 0 and ps.connections == 1
    # faults put into the plant show on the pins: e-stop pressed (HIGH), switch stuck pressed
    # (LOW), beam blocked (LOW), pot wire broken to the top rail
    ps.inject("estop", on=True)
    ps.inject("switch_stuck", level=0)
    ps.inject("beam_blocked")
    ps.inject("pot_broken", rail=1)
    pins, adc = exec_out(b, READ_BENCH, "resume")
    assert pins == "[1, 0, 0]" and adc.split()[0] == "65535", (pins, adc)


def test_servo_pwm_drives_the_plant(board_in_world):
    b, ps = board_in_world
    out = exec_out(b, "\n".join([
        "from machine import Pin, PWM, ADC",
        "import time",
        "jaw = PWM(Pin(6), freq=50, duty_ns=2400000)",
        "time.sleep_ms(1500)",
        "wide = ADC(26).read_u16()",
        "jaw.duty_ns(900000)",
        "time.sleep_ms(1500)",
        "print(wide, ADC(26).read_u16())",
    ]))
    wide, narrow = (int(v) for v in out[0].split())
    with ps.lock:
        assert ps.plant.servos.pulses[4] == 900          # the pulse the plant's gripper servo gets
    assert wide > narrow + 2000                         # the pot followed the jaw


def test_the_firmware_and_the_repl_share_one_plant_connection(flash):
    deploy_firmware(flash)
    ps = WorldService("nominal", seed=3)
    with VirtualBoard(flash, world_service=ps, scenario="nominal", seed=3) as b:
        with LinkClient(b.address) as c:
            r = c.request(link.T_PING, (), timeout=30)
            assert r.ok
        before = ps.exchanges
        # Ctrl-C stops main.py; the same interpreter (resume: no soft reset) reads the bench
        # through the module the firmware's HAL used: one count of exchanges for both.
        out = exec_out(b, "from machine import Pin\nprint(Pin(14, Pin.IN, Pin.PULL_UP).value())\n"
                          "import vboard_io\nprint(vboard_io.exchanges)", "resume")
        assert out[0] == "1"
        # At most one reconnect: the Ctrl-C may cut an exchange in half (the plant served it,
        # the board never read the reply), and the next one starts on a fresh connection
        # rather than read half a reply.
        assert ps.connections <= 2
        # The count the REPL reads is the firmware's: it holds every exchange before the Ctrl-C.
        # After it the HAL's e-stop guard (a thread) moves the plant on in real time through the
        # same module, so the plant has served at least as many by the time we ask it.
        assert before < int(out[1]) <= ps.exchanges


def test_one_flash_is_one_board_id_across_seeds_scenarios_and_restarts(tmp_path):
    a, other = tmp_path / "a", tmp_path / "b"
    for d in (a, other):
        d.mkdir()
        deploy_firmware(d)

    def board_id(flash, scenario, seed):
        ps = WorldService(scenario, seed=seed) if scenario else None
        with VirtualBoard(flash, world_service=ps, scenario=scenario, seed=seed) as b:
            with LinkClient(b.address) as c:
                r = c.request(link.T_PING, (), timeout=30)
                assert r.ok, r
                return r.payload[0]

    first = board_id(a, "nominal", 1)
    assert first.startswith("pico-5642")
    assert board_id(a, "nominal", 7) == first
    assert board_id(a, "part_offset", 3) == first
    assert board_id(a, None, None) == first
    assert board_id(other, "nominal", 1) != first
