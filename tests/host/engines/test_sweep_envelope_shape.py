# The envelope a sweep draws is physically sensible: part_offset with no yaw, offsets inside and
# beyond the jaw margin worked out here from the geometry, real cycles on the local pool.
#
# The jaw opens to jaw_max_um (45 mm) around a 25 mm cube: 10 mm to spare on each side across the
# jaws. The scenario moves the part by dx, dy drawn from U(-off, off) on the world axes; the jaws
# close across the direction tangential to the base at the pad (x, y) = SOURCE_XY_MM, so the
# offset across the jaws is at most off * (|sin phi| + |cos phi|), phi = atan2(y, x). Up to
# off = 10 mm / (|sin phi| + |cos phi|) (7.8 mm here) the open jaws straddle every part; beyond
# it a growing share of parts lies partly under a finger, and success must fall.
import math

import pytest

from surepick.host.engines import sweep_run
from surepick.host.engines.sweep import make_plan
from surepick.host.engines.sweep_pool import LocalPool
from surepick.host.records import envelope
from surepick.shared_fsm.config import Config
from surepick.sim.plant import PARTS, SOURCE_XY_MM

pytestmark = pytest.mark.slow


def jaw_margin_offset_mm():
    spare = (Config().jaw_max_um / 1000.0 - PARTS["cube25"]["size_mm"][1]) / 2.0
    phi = math.atan2(SOURCE_XY_MM[1], SOURCE_XY_MM[0])
    return spare / (abs(math.sin(phi)) + abs(math.cos(phi)))


def test_success_falls_beyond_the_jaw_margin_and_nothing_is_a_false_success(tmp_path):
    margin = jaw_margin_offset_mm()
    assert 7.5 < margin < 8.0
    plan = make_plan("part_offset", ["offset_mm=0,4,7,10,13,16", "yaw_deg=0"], seeds=12, chunk=4)
    run = sweep_run.run_sweep(plan, str(tmp_path), LocalPool(2))
    cells = envelope.build_cells(plan, run.results)
    assert all(c.runs == 12 for c in cells)
    assert sum(c.false_success for c in cells) == 0, [(c.values, c.false_success) for c in cells]
    inside = [c for c in cells if c.values["offset_mm"] <= margin]
    beyond = [c for c in cells if c.values["offset_mm"] > margin]
    # inside the margin the jaws straddle every part: at most one failure in 36 cycles
    assert sum(c.runs - c.placed for c in inside) <= 1, [(c.values, c.faults) for c in inside]
    # beyond it, success falls for real: at the largest offset even the Wilson upper bound is
    # below the envelope's 0.95 ...
    assert beyond[-1].high < 0.95, (beyond[-1].placed, beyond[-1].runs)
    # ... and monotone enough: no cell further out is above the upper bound of one nearer in
    for i, near in enumerate(beyond):
        for far in beyond[i + 1:]:
            assert far.rate <= near.high, (near.values, near.rate, far.values, far.rate)
    # the envelope (0.95, as drawn by default) holds every inside cell
    assert all(c.in_envelope for c in inside)
