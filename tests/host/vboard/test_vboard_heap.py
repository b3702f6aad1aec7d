# The virtual board's heap is a Pico's, measured where it matters: the share of the heap the
# firmware takes once it is imported and its App built, from .mpy files as deploy ships them.
# A 64-bit build stores the same objects in about 1.4 times the bytes (8-byte pointers, 32-byte GC
# blocks), so equal bytes would not be a Pico: in a heap of a Pico's 246 KB the firmware (192 KB
# here) would leave a fifth of what it leaves on a Pico. Sized so the firmware's share matches, the
# board runs out of heap when a Pico would, not earlier or much later.
#
# The Pico's figures: MicroPython v1.28.0 RPI_PICO (/work/shared/rp2040/firmware.uf2) in rp2040js,
# this firmware built for armv6m as deploy builds it, copied to /lib with `mpremote fs cp -r`,
# MEASURE run with `mpremote exec` after `preload.load()` as main.py boots it (on the chip the
# modules imported in one go fragment its heap; a fresh raw REPL, twice, the same both times):
# heap 245,888 B; 4,432 B allocated at a fresh raw REPL; importing surepick.firmware.app and
# building App(rp2040 HAL) took 167,216 B more: 69.3 % of what code can use, 74,240 B left (the
# arm description's kinematics and boot-time check take 13,296 B of it: the firmware without them
# measured 153,920 B the same way). As the firmware grows the share grows on both in step (the
# heap here is ~1.37 x a Pico's plus the board's own preloaded modules), so the figure ages
# slowly; re-measure it as above.
import subprocess
import sys
from pathlib import Path

import pytest

from surepick.host import deploy as dp
from surepick.host.deploy.artifacts import march_of
from surepick.host.vboard import VirtualBoard

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON

PICO_HEAP = 245888
PICO_FRESH_ALLOC = 4432
PICO_FIRMWARE = 167216
PICO_SHARE = PICO_FIRMWARE / (PICO_HEAP - PICO_FRESH_ALLOC)      # 69.3 % of what code can use

MEASURE = """
import gc
gc.collect()
a0 = gc.mem_alloc()
total = gc.mem_free() + a0
from surepick.firmware import preload
preload.load()          # as main.py loads it, and as the Pico's figure was measured
from surepick.firmware import app
from surepick.firmware.hal import for_this_port
a = app.App(for_this_port())
gc.collect()
print(total, a0, gc.mem_alloc())
"""


def test_the_firmware_takes_the_share_of_the_heap_it_takes_on_a_pico(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    with VirtualBoard(flash) as b:
        b.wait_repl(20)
        # Native code for the board's own architecture, as `surepick deploy` builds it.
        p = subprocess.run([MPREMOTE, "connect", b.address, "exec",
                            "import sys; print(sys.implementation._mpy)"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (p.stdout, p.stderr)
        for art in dp.build(mpy_cross=dp.find_mpy_cross(), march=march_of(int(p.stdout))):
            if art.board_path == "/main.py":
                continue                 # measured from the REPL, not running
            dest = flash / art.board_path.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(art.data)
        p = subprocess.run([MPREMOTE, "connect", b.address, "exec", MEASURE],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Error" not in p.stdout, (p.stdout, p.stderr)
    total, fresh, after = (int(v) for v in p.stdout.split())
    share = (after - fresh) / (total - fresh)
    print("\nheap %d B, fresh %d B allocated, firmware %d B: %.1f %% (Pico %.1f %%)"
          % (total, fresh, after - fresh, 100 * share, 100 * PICO_SHARE))
    assert share == pytest.approx(PICO_SHARE, rel=0.10)
