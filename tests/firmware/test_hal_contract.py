# Every HAL implementation against the one contract (firmware/hal/contract.py), checked by
# tests/mpy/hal_check.py on the interpreters it runs on: under the real `micropython` binary (the
# RP2040 HAL with a stand-in `machine` module put first on its path) and under CPython. The
# implementations come from one table; a deliberately broken HAL proves the checker can fail,
# and the firmware's own source proves the contract names what the firmware calls.
import ast
import sys
import textwrap

import pytest

from tests.conftest import REPO
from tests.support import mpy as host_helpers
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.rp2_machine import stand_in_dir

from surepick.firmware.hal import contract

host_helpers.use_vectors()          # tests/mpy on sys.path: hal_check and checks for CPython
import hal_check  # noqa: E402

MPY, CPY = "micropython", "cpython"

# The implementations: (name, level, interpreters, Python source that leaves it in `impl`).
IMPLEMENTATIONS = (
    ("rp2040", "BOARD", (MPY,),
     "from surepick.firmware.hal import rp2040 as impl"),
    ("virtual", "BOARD", (MPY,),
     "import sys\nsys.path.append('host/vboard')   # its vboard_io, as the virtual board has it\n"
     "from surepick.firmware.hal import virtual as impl"),
    ("scripted", "BOARD", (MPY, CPY),
     "from surepick.firmware.hal.scripted import ScriptedHal\n"
     "from surepick.shared_fsm.config import Config\n"
     "impl = ScriptedHal(Config())"),
    ("hil", "PINS", (MPY, CPY),
     "from surepick.firmware.hal.hil import HilPins\n"
     "from surepick.firmware.settings import Pins, board_defaults\n"
     "impl = HilPins(Pins(board_defaults()), 1, [1500, 1500, 1500, 1500, 1500])"),
    ("world_pins", "BOARD", (CPY,),
     "from surepick.firmware.hal.world_pins import WorldPins\n"
     "from surepick.sim.world import World\n"
     "impl = WorldPins(World())"),
)

CASES = [pytest.param(name, level, interp, setup, id="%s-%s" % (name, interp),
                      marks=[NEEDS_MICROPYTHON] if interp == MPY else [])
         for name, level, interps, setup in IMPLEMENTATIONS for interp in interps]


def check_under_micropython(level, setup, tmp_path):
    # -> (problems, RESULT figures) from hal_check.py run by the micropython binary
    proc = host_helpers.run("hal_check.py", level, setup, text=True, timeout=60,
                            path_first=[stand_in_dir(tmp_path)])
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    problems = [line[5:] for line in out.splitlines() if line.startswith("FAIL ")]
    assert proc.returncode == (1 if problems else 0), out
    return problems, host_helpers.results(out)


def check_under_cpython(level, setup):
    ns = {}
    exec(setup, ns)
    lv = getattr(contract, level)
    return hal_check.problems(ns["impl"], lv), {"functions": len(hal_check.functions(lv)),
                                                "constants": len(hal_check.constants(lv))}


def check(level, interp, setup, tmp_path):
    if interp == MPY:
        return check_under_micropython(level, setup, tmp_path)
    return check_under_cpython(level, setup)


# ---- the contract itself ----

PINS_NAMES = {"read_u16", "read_pin", "set_pulse_us", "pwm_start"}   # what the drivers use


def test_contract_levels_and_constants():
    pins = hal_check.functions(contract.PINS)
    board = hal_check.functions(contract.BOARD)
    assert {n for n, _ in pins} == PINS_NAMES
    assert board[:len(pins)] == pins                       # BOARD includes PINS
    names = [n for n, _ in board]
    assert len(names) == len(set(names)) == 21
    assert dict(board)["set_pulse_us"] == ("index", "us") and dict(board)["ticks_ms"] == ()
    consts = dict(hal_check.constants(contract.BOARD))
    assert consts == {"RESET_UNKNOWN": 0, "RESET_POWER_ON": 1, "RESET_WATCHDOG": 2,
                      "RESET_SOFT": 3, "RESET_HARD": 4}    # the numbers HELLO has always carried
    assert hal_check.constants(contract.PINS) == []


def test_contract_ships_and_is_board_code():
    from surepick.firmware import manifest
    assert "firmware/hal/contract" in manifest.MODULES
    assert "firmware/hal/scripted" not in manifest.MODULES          # host and test only


def _hal_uses(path):
    # Attribute names the module takes from `hal` or `self.hal` (calls and bound references).
    used = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute):
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "hal") or \
                    (isinstance(v, ast.Attribute) and v.attr == "hal"):
                used.add(node.attr)
    return used


def test_the_contract_is_what_the_firmware_calls():
    # Read from the firmware's source, not from any HAL: every name it takes from its hal is in
    # the contract, the contract names nothing the firmware never uses, and the drivers that HIL
    # and the simulator hand PINS-level objects to use nothing beyond PINS.
    fw = REPO / "firmware"
    files = sorted(p for p in fw.rglob("*.py") if "hal" not in p.relative_to(fw).parts)
    used = set()
    for p in files:
        used |= _hal_uses(p)
    assert used == {n for n, _ in hal_check.functions(contract.BOARD)}
    for driver in ("sensors.py", "servo.py"):
        assert _hal_uses(fw / driver) <= PINS_NAMES, driver


# ---- every implementation ----

@pytest.mark.parametrize("name,level,interp,setup", CASES)
def test_implementation_meets_the_contract(name, level, interp, setup, tmp_path):
    problems, res = check(level, interp, setup, tmp_path)
    assert problems == [], (name, interp, problems)
    lv = getattr(contract, level)
    assert res["functions"] == len(hal_check.functions(lv)) and res["constants"] == len(hal_check.constants(lv))


@NEEDS_MICROPYTHON
def test_rp2040_reset_cause_is_a_contract_constant(tmp_path):
    script = textwrap.dedent("""\
        import machine
        from surepick.firmware.hal import rp2040, contract
        for port, want in ((machine.PWRON_RESET, "RESET_POWER_ON"), (machine.WDT_RESET, "RESET_WATCHDOG"),
                           (machine.SOFT_RESET, "RESET_SOFT"), (machine.HARD_RESET, "RESET_HARD"),
                           (99, "RESET_UNKNOWN")):
            machine.cause = port
            print(want, rp2040.reset_cause() == getattr(contract, want))
        """)
    (tmp_path / "causes.py").write_text(script)
    proc = host_helpers.run(tmp_path / "causes.py", text=True, timeout=60, path_first=[stand_in_dir(tmp_path)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["RESET_POWER_ON True", "RESET_WATCHDOG True", "RESET_SOFT True",
                         "RESET_HARD True", "RESET_UNKNOWN True"]


# ---- the checker can fail ----

def _module_source(skip=(), arity=None, varargs=(), consts=None):
    # A board HAL module written from scratch, with the given defects.
    arity = arity or {}
    lines = []
    for name, params in hal_check.functions(contract.BOARD):
        if name in skip:
            continue
        ps = list(params) + ["extra%d" % i for i in range(arity.get(name, len(params)) - len(params))]
        ps = ps[:arity.get(name, len(params))]
        if name in varargs:
            ps = ["*args"]
        lines.append("def %s(%s):\n    return 0\n" % (name, ", ".join(ps)))
    for name, value in (consts if consts is not None else hal_check.constants(contract.BOARD)):
        lines.append("%s = %d\n" % (name, value))
    return "\n".join(lines)


BROKEN = dict(skip=("wdt_feed",), arity={"read_u16": 2, "ticks_ms": 1}, varargs=("console_write",),
              consts=[("RESET_UNKNOWN", 0), ("RESET_POWER_ON", 1), ("RESET_WATCHDOG", 2),
                      ("RESET_SOFT", 7)])
BROKEN_NAMES = {"wdt_feed", "read_u16", "ticks_ms", "console_write", "RESET_SOFT", "RESET_HARD"}

BROKEN_PINS = """\
class Pins:
    def read_u16(self, adc):
        return 0

    def read_pin(self):
        return 1

    def pwm_start(self, pulses_us, extra):
        pass


impl = Pins()
"""


@pytest.mark.parametrize("interp", [pytest.param(MPY, marks=NEEDS_MICROPYTHON), CPY])
def test_checker_catches_a_broken_board_hal(interp, tmp_path):
    mod = tmp_path / "mods"
    mod.mkdir()
    (mod / "good_hal.py").write_text(_module_source())
    (mod / "broken_hal.py").write_text(_module_source(**BROKEN))
    sys.path.insert(0, str(mod))
    try:
        setup = "import sys\nsys.path.insert(0, %r)\nimport %%s as impl" % str(mod)
        good, _ = check("BOARD", interp, setup % "good_hal", tmp_path)
        bad, res = check("BOARD", interp, setup % "broken_hal", tmp_path)
    finally:
        sys.path.remove(str(mod))
        for m in ("good_hal", "broken_hal"):
            sys.modules.pop(m, None)
    assert good == []
    named = {p.split(":")[0].split("(")[0].split(" ")[0] for p in bad}
    assert named == BROKEN_NAMES and len(bad) == len(BROKEN_NAMES), bad


@pytest.mark.parametrize("interp", [pytest.param(MPY, marks=NEEDS_MICROPYTHON), CPY])
def test_checker_catches_broken_pins_methods(interp, tmp_path):
    bad, _ = check("PINS", interp, BROKEN_PINS, tmp_path)
    named = sorted(p.split("(")[0].split(":")[0] for p in bad)
    assert named == ["pwm_start", "read_pin", "set_pulse_us"], bad
