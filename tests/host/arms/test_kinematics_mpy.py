# The same IK o FK identity as tests/host/arms/test_kinematics.py, under the real `micropython` (the
# board's interpreter; tests/mpy/arm_kinematics.py): every preset and the no-wrist stand-in,
# 1,000 configurations each inside the workspace.
import json

from tests.host.arms.test_kinematics import ARMS
from tests.support import mpy
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


def test_ik_of_fk_is_the_identity_under_micropython(tmp_path):
    path = tmp_path / "arms.json"
    path.write_text(json.dumps([a.to_dict() for a in ARMS.values()]))
    proc = mpy.run("arm_kinematics.py", path, 1000, timeout=300)
    out = proc.stdout.decode()
    res = mpy.results(out)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    for arm in ARMS.values():
        assert res[arm.name + "_checked"] == 1000, out[-2000:]
        assert res[arm.name + "_bad"] == 0, out[-2000:]
    assert res["fails"] == 0
