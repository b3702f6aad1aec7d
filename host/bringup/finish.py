"""Bring-up's last steps, on the board (with --apply), each saved as soon as it is confirmed:

    apply        the board gets what was found: DIR/arm.toml as its /arm.json (deploy --arm's
                 code; it restarts) and the pot line as its pot_closed_counts and pot_counts_per_mm
    gripper.current  the gripper's current closed on nothing, squeezing the part the person holds
                 in the jaws and pressing on it at stall: the board gets current_grip_min_ma,
                 current_stall_ma, current_crush_ma and current_hold_limit_ma of them (squeeze.py)
    cycle.dry    the dry cycle (cycles.py)
    cycle.first  the first real cycle (cycles.py)

The dry cycle slows the arm through two board settings; their values are saved in the state
before they change and put back after it (and at the start of a bring-up killed meanwhile)."""
from surepick.host.bringup import cycles
from surepick.host.bringup import gripper as gripper_mod
from surepick.host.bringup import squeeze
from surepick.host.bringup.jog import BringupStop, config_get
from surepick.shared_fsm import link

APPLY = "apply"
STEPS = (APPLY, squeeze.STEP) + cycles.STEPS


def job_args(arm, attempts=None):
    """JOB's link fields for this arm's own bench: pick on the pad, place in the bin (the poses
    `surepick arm check` checks), the bench's part width."""
    from surepick.host.arms.checks import bench_poses
    from surepick.host.link.jobs import JobSpec
    poses = dict(bench_poses(arm))
    return JobSpec(poses["pick"], poses["place"], arm.bench["part_mm"], attempts).link_args()


def note_found(path, key, values):
    """found.json (written by the write step) with `key` set to `values`: what the cycles measured.
    -> None, or why it could not (the file missing, damaged or not writable; left as it was)."""
    import json
    import os
    try:
        with open(path) as f:
            d = json.load(f)
        if not isinstance(d, dict) or not isinstance(d.setdefault("gripper", {}), dict):
            return "it is not the object the write step wrote"
        d["gripper"][key] = values
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(d, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        return str(e)
    return None


class Finish:
    def __init__(self, state, client, jog, operator, port, ship, say=print, found_path=None):
        # found_path: DIR/found.json, where the cycles' measurements are added
        # ship(path): the board gets DIR/arm.toml and restarts (cli/bringup.py, apply.py)
        self.state = state
        self.c = client
        self.jog = jog
        self.op = operator
        self.port = port
        self.ship = ship
        self.say = say
        self.found_path = found_path

    def run(self, arm_path, load_arm, skip=()):
        self._put_back()
        self.state.run(STEPS, lambda name: self._run_one(name, arm_path, load_arm), self.say, skip)

    def _run_one(self, name, arm_path, load_arm):
        if name == APPLY:
            return self.apply(arm_path)
        a = self.state.get(APPLY)
        if not a or a.get("skipped"):
            raise BringupStop("the board was not given what bring-up found (the apply step): "
                              "`surepick bringup --redo apply --apply`")
        arm = load_arm(arm_path)
        result = {cycles.DRY: self.dry, cycles.FIRST: self.first, squeeze.STEP: self.current}[name](arm)
        if self.found_path:     # a step's result is one set of readings: {what: readings}
            key, value = next(iter(sorted(result.items())))
            why = note_found(self.found_path, key, value)
            if why:     # the readings are not lost: the state keeps the step's result
                self.say("  could not add %s to %s (%s): the readings are kept in the step %s of %s"
                         % (key, self.found_path, why, name, self.state.path))
        return result

    # ---- the board's settings ----

    def _set(self, key, value):
        from surepick.host.link import busy
        r = busy.write_at_rest(self.c, link.T_CONFIG_SET, (key, int(value)), 5.0)
        if not r.ok:
            from surepick.host.link.answers import refusal
            raise BringupStop("the board did not take %s = %d: %s" % (key, value, refusal(r.code, r.payload, self.port)))

    def _put_back(self):
        # Settings a dry cycle slowed and a killed bring-up left so: their own values again.
        saved = self.state.restore()
        if saved:
            for key, value in sorted(saved.items()):
                self._set(key, value)
            self.state.set_restore(None)
            self.say("put back the board's %s (a dry cycle had slowed them)" % ", ".join(sorted(saved)))

    # ---- the steps ----

    def apply(self, arm_path):
        self.jog.leave()
        self.ship(arm_path)
        pot = self.state.get(gripper_mod.STEP)
        done = {}
        if pot and not pot.get("skipped"):
            for key, value in gripper_mod.settings(pot):
                self._set(key, value)
                done[key] = value
            self.say("the board's pot: %s" % ", ".join("%s %d" % kv for kv in sorted(done.items())))
        return {"arm": arm_path, "settings": done}

    def current(self, arm):
        found = squeeze.run(self.jog, self.op, arm, self.say)
        for key, value in squeeze.settings(found, config_get(self.c, "current_grip_min_ma")):
            self._set(key, value)
        self.say(squeeze.summary(found))
        return {"current": found}

    def _pot(self):
        r = self.state.get(gripper_mod.STEP)
        if not r or r.get("skipped"):
            return {"closed_counts": config_get(self.c, "pot_closed_counts"),
                    "counts_per_mm": config_get(self.c, "pot_counts_per_mm")}
        return r

    def dry(self, arm):
        self.jog.leave()
        self.jog.safe()
        self.op.hand("part-remove")
        speeds = {k: config_get(self.c, k) for k in cycles.SPEED_KEYS}
        self.state.set_restore(speeds)
        for k, v in speeds.items():
            self._set(k, max(1000, int(v * cycles.DRY_SPEED_FRACTION)))
        self.say("the dry cycle: no part, the arm at %d%% speed, one attempt"
                 % int(100 * cycles.DRY_SPEED_FRACTION))
        try:
            cyc = cycles.run_job(self.c, job_args(arm, attempts=1), port=self.port)
        finally:
            try:
                self._put_back()
            except BringupStop:          # a cycle still running: the board takes no setting
                self.say("the board's speeds stay slowed while its job runs: the next bringup puts them back")
        e = cycles.check_dry(cyc, self.port)
        r = self.c.request(link.T_CLEAR_FAULT, (), 5.0)
        if not r.ok:
            raise BringupStop("the board did not clear the dry cycle's GRASP_FAILED (%s): `surepick job clear "
                              "--port %s`, then run bringup again" % (r.code_name, self.port))
        seen = cycles.readings(e, self._pot())
        self.say("closed on nothing: the jaw at %.2f mm, %d mA, checks saying a part: %s"
                 % (seen["jaw_mm"], seen["current_ma"], ", ".join(seen["checks"]) or "none"))
        return {"closed_on_nothing": seen}

    def first(self, arm):
        self.jog.leave()
        self.jog.safe()
        self.op.hand("part-back")
        cyc = cycles.run_job(self.c, job_args(arm), port=self.port)
        e = cycles.check_first(cyc, self.port)
        seen = cycles.readings(e, self._pot())
        grip_min = config_get(self.c, "current_grip_min_ma")
        self.say("the first cycle placed the part; squeezing it the gripper drew %d mA (the current check "
                 "counts from current_grip_min_ma %d mA), the jaw at %.2f mm; checks saying a part: %s"
                 % (seen["current_ma"], grip_min, seen["jaw_mm"], ", ".join(seen["checks"])))
        if seen["current_ma"] < grip_min:
            self.say("the squeeze current is below current_grip_min_ma: the current check does not count a "
                     "held part on this gripper; `surepick config set current_grip_min_ma N` with N between "
                     "the closed-on-nothing and the squeeze current (docs/bringup.md)")
        return {"squeezing": seen}
