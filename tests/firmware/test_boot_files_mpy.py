# firmware/settings.py and firmware/boot_recovery.py read their files under the real
# `micropython` with a Pico-sized heap (tests/mpy/fw_boot_files.py): every value that can be used
# is kept, every one that cannot is named with its reason, at the edges of every range.
import subprocess

from tests.support import mpy as host_helpers
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


def test_boot_files_keep_what_they_can_and_name_the_rest(tmp_path):
    cmd = [host_helpers.micropython(), "-X", "heapsize=192wK",
           str(host_helpers.HERE / "fw_boot_files.py"), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=str(host_helpers.ROOT), env=host_helpers.env(),
                          capture_output=True, timeout=120)
    out = proc.stdout.decode()
    res = host_helpers.results(out)
    assert proc.returncode == 0 and res.get("fails") == 0, proc.stderr.decode()[-3000:] + out[-3000:]
    assert res["cases"] >= 100
