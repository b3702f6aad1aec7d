# The gripper geometry the part search plans from (shared_fsm/gripper_geometry.py) against
# MuJoCo's own kinematics of the model: the arm posed with the tool straight down and the jaw
# open as wide as it goes, then measured from the compiled sites and geoms.
import itertools
import math

import mujoco
import numpy as np
import pytest

from surepick.shared_fsm import gripper_geometry as gg
from surepick.shared_fsm import kinematics
from surepick.shared_fsm.config import Config
from surepick.sim.plant import Plant


def _posed():
    p = Plant(part=None)
    m, d = p.m, p.d
    q = kinematics.inverse(160.0, -60.0, 40.0, -90.0)
    for name, v in zip(("base_yaw", "shoulder", "elbow", "wrist"), q):
        d.qpos[m.jnt_qposadr[m.joint(name).id]] = math.radians(v)
    half = m.jnt_range[m.joint("finger_l").id][1]
    for f in ("finger_l", "finger_r"):
        d.qpos[m.jnt_qposadr[m.joint(f).id]] = half
    mujoco.mj_forward(m, d)
    return m, d


def _corners(m, d, geom):
    g = m.geom(geom).id
    size = m.geom_size[g]
    rot = d.geom_xmat[g].reshape(3, 3)
    return [d.geom_xpos[g] + rot @ (np.array(s) * size) for s in itertools.product((-1, 1), repeat=3)]


def test_the_search_reads_the_model_s_gripper():
    m, d = _posed()
    jaw = d.site_xpos[m.site("jaw_centre").id] * 1000.0
    emit = d.site_xpos[m.site("beam_emitter").id] * 1000.0
    recv = d.site_xpos[m.site("beam_receiver").id] * 1000.0
    g = gg.geometry(Config())
    # the beam runs level, this far above the jaw centre when the tool points down
    assert emit[2] == pytest.approx(recv[2], abs=1e-6)
    assert emit[2] - jaw[2] == pytest.approx(g.beam_behind / 1000.0, abs=1e-6)
    fingers = ("finger_l_plate", "pad_l", "face_r", "finger_r_plate")
    pts = np.array([c * 1000.0 for f in fingers for c in _corners(m, d, f)])
    # the finger tips reach this far below the jaw centre
    assert jaw[2] - pts[:, 2].min() == pytest.approx(g.finger_tip / 1000.0, abs=1e-6)
    # across the closing direction (horizontal, square to the beam) a finger is this wide
    beam = (recv - emit)[:2] / np.linalg.norm((recv - emit)[:2])
    across = np.array([-beam[1], beam[0]])
    extent = pts[:, :2] @ across
    assert extent.max() - extent.min() == pytest.approx(g.finger_height / 1000.0, abs=1e-6)
    # along it, from its gripping face to its outer face: the left finger (pad, gap, plate) is
    # finger_outer thick, the right one thinner
    thick = []
    for plate, face in (("finger_l_plate", "pad_l"), ("finger_r_plate", "face_r")):
        a = np.array([c[:2] * 1000.0 for f in (plate, face) for c in _corners(m, d, f)]) @ beam
        thick.append(a.max() - a.min())
    assert thick[0] == pytest.approx(g.finger_outer / 1000.0, abs=1e-6)
    assert thick[1] < thick[0]
    # and the jaw opens to the config's jaw_max_um, which the probes use
    assert d.ten_length[m.tendon("jaw_opening").id] * 1e6 == pytest.approx(g.opening, abs=1)
