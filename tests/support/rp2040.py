# The RP2040 image and the Node engine the emulated-chip tests need: the image's path, else a
# skip naming what is missing; under CI=true a failure instead (CI has ../shared/rp2040/).
import os

import pytest

from surepick.host.engines.rp2040 import EmulatorError, find_uf2
from surepick.host.engines.rp2040.chip import check_node_modules, find_node


def chip_image():
    try:
        path = find_uf2()
        find_node()
        check_node_modules()
    except EmulatorError as e:  # FirmwareMissing is one
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the rp2040 engine: %s" % e, pytrace=False)
        pytest.skip(str(e))
    return path
