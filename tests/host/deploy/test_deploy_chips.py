# `surepick deploy` to a board that reports each Pico's chip: the virtual board started as a model
# reports that board's machine string and native-code architecture and has the chip's registers
# behind machine.mem32 (host/vboard/vboard_model.py). A watchdog left running (as a crashed
# firmware, or an older firmware that stopped it at another chip's address, leaves it) is stopped
# by the deploy at THIS chip's address, nothing lands in the RP2350's USB PLL, and every .mpy
# carries native code for the chip. Expected numbers: pico-sdk addressmap.h / watchdog.h and
# MicroPython's py/persistentcode.h, as cited in tests/firmware/test_hal_chips.py.
import pytest

from surepick.host import deploy as dp
from surepick.host.vboard import VirtualBoard

from tests.firmware.test_hal_chips import CLR, ENABLE, RP2350_PLL_USB, SET
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

# model -> (WATCHDOG_BASE, .mpy native arch number)
CASES = [
    pytest.param("pico2", 0x400D8000, 7, id="pico2"),
    pytest.param("pico_w", 0x40058000, 4, id="pico_w", marks=pytest.mark.slow),
    pytest.param("pico2_w-riscv", 0x400D8000, 11, id="pico2_w-riscv", marks=pytest.mark.slow),
]


def _exec(board, code):
    import subprocess
    from tests.firmware.test_rp2040_hal_takeover import MPREMOTE
    r = subprocess.run([MPREMOTE, "connect", board.address, "exec", code], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.parametrize("model,watchdog,arch", CASES)
def test_deploy_stops_the_chips_watchdog_and_compiles_for_it(model, watchdog, arch, tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    with VirtualBoard(flash, model=model) as board:
        board.wait_repl(20)
        # a watchdog left running: ENABLE set through the block's SET alias
        _exec(board, "import machine\nmachine.mem32[%d] = %d\n" % (watchdog + SET, ENABLE))
        assert board.registers[watchdog] & ENABLE
        notes = []
        res = dp.deploy(board.address, wait_hello=False, progress=notes.append)
        assert board.registers[watchdog] & ENABLE == 0, board.register_writes
        assert (watchdog + CLR, ENABLE) in board.register_writes
        if watchdog != 0x40058000:   # on an RP2350 nothing may land in the USB PLL's block
            assert not [a for a, _ in board.register_writes if RP2350_PLL_USB <= a < RP2350_PLL_USB + 0x4000]
        said = [n for n in notes if n.startswith("board: ")]
        assert res.micropython.board.chip and res.micropython.board.chip in said[0], notes
    for path in res.copied:
        if path.endswith(".mpy"):
            data = (flash / path.lstrip("/")).read_bytes()
            assert data[2] >> 2 in (0, arch), (path, data[2] >> 2)
    app = (flash / "lib/surepick/firmware/app.mpy").read_bytes()
    assert app[2] >> 2 == arch


def test_a_board_that_is_no_pico_gets_no_register_write(tmp_path):
    # The plain virtual board reports the unix port: deploy writes no register (its mem32 would
    # be this host's memory).
    flash = tmp_path / "flash"
    flash.mkdir()
    with VirtualBoard(flash) as board:
        board.wait_repl(20)
        from surepick.host.deploy.raw_repl import RawReplBoard
        t = RawReplBoard(board.address)
        t.connect(10)
        try:
            assert t.watchdog_stopped_at == 0
            assert t.info().board.chip is None
        finally:
            t.close()
