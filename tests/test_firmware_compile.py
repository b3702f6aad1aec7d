# Every firmware file (and the virtual HAL, which runs on the same interpreter) compiles for the
# RP2040 with mpy-cross -march=armv6m.
import subprocess

import pytest

from conftest import REPO

FILES = sorted(p for p in (REPO / "firmware").glob("*.py") if p.name != "__init__.py")
FILES.append(REPO / "tools" / "vhal" / "board_hal.py")


def test_there_are_firmware_files():
    names = {p.name for p in FILES}
    assert {"app.py", "board_hal.py", "main.py", "servo.py", "sensors.py", "settings.py",
            "boot_recovery.py", "telemetry.py"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_compiles_for_armv6m(path, mpy_cross_bin, tmp_path):
    out = tmp_path / (path.stem + ".mpy")
    r = subprocess.run([mpy_cross_bin, "-march=armv6m", "-o", str(out), str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0
