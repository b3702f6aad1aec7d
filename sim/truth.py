# Ground truth the real bench cannot see: where the part is, what touches it, whether it is in
# the bin. Used by tests and run reports to judge a pick, never by the state machine.
import math

import mujoco
import numpy as np

FINGER_GEOMS = ("pad_l", "face_r", "finger_l_plate", "finger_r_plate")
SUPPORT_GEOMS = ("source_pad", "table")
BIN_GEOMS = ("bin_floor", "bin_wall_px", "bin_wall_nx", "bin_wall_py", "bin_wall_ny")


class Truth:
    def __init__(self, model, data, bin_xy_m, bin_inner_half_m, bin_wall_top_m, joint_slots=None):
        # joint_slots: sim/arm_model.joint_slots(arm), the hinges that make each joint slot's
        # angle (None: a serial arm's four hinges, one a slot)
        self.m = model
        self.d = data
        self.bin_xy = bin_xy_m
        self.bin_half = bin_inner_half_m
        self.bin_top = bin_wall_top_m
        gid = lambda n: model.geom(n).id
        self.finger_ids = {gid(n) for n in FINGER_GEOMS}
        self.grip_ids = {gid("pad_l"), gid("face_r")}
        self.support_ids = {gid(n) for n in SUPPORT_GEOMS}
        self.bin_ids = {gid(n) for n in BIN_GEOMS}
        self.has_part = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "part") >= 0
        if self.has_part:
            self.part_body = model.body("part").id
            self.part_geom = model.geom("part").id
            jnt = model.joint("part_free").id
            self.part_qpos = model.jnt_qposadr[jnt]
            self.part_qvel = model.jnt_dofadr[jnt]
        slots = joint_slots or [(n,) for n in ("base_yaw", "shoulder", "elbow", "wrist")]
        self.slot_q = [[model.jnt_qposadr[model.joint(n).id] for n in js] for js in slots]
        self.slot_v = [[model.jnt_dofadr[model.joint(n).id] for n in js] for js in slots]
        # One hinge a slot (serial): the addresses themselves, read without summing (hot path).
        single = all(len(js) == 1 for js in slots)
        self.q_adr = [a[0] for a in self.slot_q] if single else None
        self.v_adr = [a[0] for a in self.slot_v] if single else None
        self.pad_adr = model.jnt_qposadr[model.joint("pad_slide").id]
        self.jaw_tendon = model.tendon("jaw_opening").id
        self.jaw_site = model.site("jaw_centre").id
        self._force = np.zeros(6)
        # Views into MjData, fetched once: read() runs every few ms of every simulated cycle.
        self._qpos = data.qpos
        self._qvel = data.qvel
        self._ten_length = data.ten_length
        self._site_xpos = data.site_xpos
        self._xmat = data.xmat

    def jaw_opening_mm(self):
        return float(self.d.ten_length[self.jaw_tendon]) * 1000.0

    def pad_travel_mm(self):
        return float(self.d.qpos[self.pad_adr]) * 1000.0

    def slot_angles_deg(self, qpos, adr, slot_adr):
        # Each joint slot's angle (or speed) from a qpos (qvel) list, in the firmware's joint
        # convention: the sum of the slot's hinges, 0 for a slot the arm does not have.
        if adr is not None:
            return [math.degrees(qpos[a]) for a in adr]
        return [math.degrees(sum(qpos[a] for a in adrs)) if adrs else 0.0 for adrs in slot_adr]

    def joint_angles_deg(self):
        return self.slot_angles_deg(self.d.qpos.tolist(), self.q_adr, self.slot_q)

    def joint_speeds_dps(self):
        return self.slot_angles_deg(self.d.qvel.tolist(), self.v_adr, self.slot_v)

    def part_contacts(self):
        # (touching fingers, grip force on the two pads in N, touching support, touching bin)
        fingers = support = in_bin_touch = False
        grip_n = 0.0
        if not self.has_part:
            return fingers, grip_n, support, in_bin_touch
        d = self.d
        pg = self.part_geom
        # The contacts' geom pairs in one array read (a contact struct per contact costs more).
        for i, (g1, g2) in enumerate(d.contact.geom.tolist()):
            if g1 == pg:
                other = g2
            elif g2 == pg:
                other = g1
            else:
                continue
            if other in self.finger_ids:
                fingers = True
                if other in self.grip_ids:
                    mujoco.mj_contactForce(self.m, d, i, self._force)
                    grip_n += abs(self._force[0])
            elif other in self.support_ids:
                support = True
            elif other in self.bin_ids:
                in_bin_touch = True
        return fingers, grip_n, support, in_bin_touch

    def read(self):
        d = self.d
        qpos = self._qpos.tolist()
        qvel = self._qvel.tolist()
        degrees = math.degrees
        jaw = self._ten_length.item(self.jaw_tendon) * 1000.0
        pad = qpos[self.pad_adr] * 1000.0
        out = {
            "time_s": float(d.time),
            "joint_angles_deg": self.slot_angles_deg(qpos, self.q_adr, self.slot_q),
            "joint_speeds_dps": self.slot_angles_deg(qvel, self.v_adr, self.slot_v),
            "jaw_opening_mm": jaw,
            "pad_travel_mm": pad,
            # Real gap between the pad face (pushed back into its finger) and the right face.
            "jaw_gap_mm": jaw + pad,
            "jaw_centre_mm": (self._site_xpos[self.jaw_site] * 1000.0).tolist(),
        }
        if not self.has_part:
            out.update(part_pos_mm=None, part_quat=None, part_speed_mps=0.0, finger_contact=False,
                       grip_force_n=0.0, support_contact=False, bin_contact=False, in_bin=False,
                       part_tilt_deg=0.0)
            return out
        a = self.part_qpos
        pos = self._qpos[a:a + 3]
        x, y, z = qpos[a:a + 3]
        vel = self._qvel[self.part_qvel:self.part_qvel + 3]
        zaxis_z = self._xmat.item(self.part_body, 8)
        fingers, grip_n, support, bin_touch = self.part_contacts()
        inside = (abs(x - self.bin_xy[0]) < self.bin_half and abs(y - self.bin_xy[1]) < self.bin_half
                  and z < self.bin_top)
        out.update(
            part_pos_mm=(pos * 1000.0).tolist(),
            part_quat=qpos[a + 3:a + 7],  # w, x, y, z
            # the vector norm as numpy.linalg.norm computes it (sqrt of the dot product)
            part_speed_mps=math.sqrt(vel.dot(vel)),
            finger_contact=fingers,
            grip_force_n=grip_n,
            support_contact=support,
            bin_contact=bin_touch,
            in_bin=inside,
            part_tilt_deg=degrees(math.acos(max(-1.0, min(1.0, zaxis_z)))),
        )
        return out
