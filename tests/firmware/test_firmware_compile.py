# Every file the firmware manifest ships to a board (firmware, its HALs, shared_fsm) compiles for
# the RP2040 with mpy-cross -march=armv6m, and the manifest names every board module there is.
import subprocess

import pytest

from tests.conftest import REPO

from surepick.host import deploy

FILES = [src for src, _, _ in deploy.shipped()]


def test_there_are_firmware_files():
    names = {str(p.relative_to(REPO)) for p in FILES}
    assert {"firmware/app.py", "firmware/hal/rp2040.py", "firmware/hal/virtual.py", "firmware/main.py",
            "firmware/servo.py", "firmware/sensors.py", "firmware/settings.py",
            "firmware/boot_recovery.py", "firmware/telemetry.py", "shared_fsm/machine.py"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_compiles_for_armv6m(path, mpy_cross_bin, tmp_path):
    out = tmp_path / (path.stem + ".mpy")
    r = subprocess.run([mpy_cross_bin, "-march=armv6m", "-o", str(out), str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0
