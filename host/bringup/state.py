"""The bring-up's saved state: one JSON file, rewritten whole (a temporary file renamed over it)
after every confirmed step, so Ctrl-C or a kill loses at most the step under way, and a rerun
resumes at the first step not confirmed.

    {"format": 1, "arm": "<the description it started from>", "steps": {"servo.base.zero": {...}},
     "board": {"directions": {"base": -1, ...}, "shipped": true},
     "restore": {"arm_speed_mdeg_s": 90000, ...}}

"board" is the description the board was given mid-bring-up (the --arm one with those servo
directions): written before the board gets it (shipped false) and again once it has it, so a
bring-up killed in between ships it again before anything moves. "restore" holds the board
settings the dry cycle slowed, saved before they change, dropped once they are put back.
"""
import json
import os

from surepick.host.user_error import BadInput

FORMAT = 1


class StateError(BadInput, ValueError):
    pass


def _not_an_object(d):
    # -> what in a read state is not the object every reader of it expects ("step 'estop'",
    # "board"), or None. Each step's result, "board" and "restore" are read with .get().
    for name, result in d["steps"].items():
        if not isinstance(result, dict):
            return "step %r" % name
    for key in ("board", "restore"):
        if key in d and not isinstance(d[key], dict):
            return key
    return None


class State:
    def __init__(self, path, arm_source):
        self.path = path
        self.data = {"format": FORMAT, "arm": arm_source, "steps": {}}
        if os.path.exists(path):
            try:
                with open(path) as f:
                    d = json.load(f)
            except (OSError, ValueError) as e:
                raise StateError("%s: cannot read the saved bring-up (%s); move it away to start over" % (path, e))
            if not isinstance(d, dict) or d.get("format") != FORMAT or not isinstance(d.get("steps"), dict):
                raise StateError("%s: not a bring-up state file (format %d); move it away to start over"
                                 % (path, FORMAT))
            bad = _not_an_object(d)
            if bad:
                raise StateError("%s: %s is not a JSON object (a damaged or hand-edited state); move it away "
                                 "to start over" % (path, bad))
            if d.get("arm") != arm_source:
                raise StateError("%s was saved for the arm %s, not %s: give that --arm, or another --out"
                                 % (path, d.get("arm"), arm_source))
            self.data = d

    @property
    def steps(self):
        return self.data["steps"]

    def done(self, name):
        return name in self.steps

    def get(self, name):
        return self.steps.get(name)

    def confirm(self, name, result):
        self.steps[name] = result
        self._save()

    def run(self, names, do_one, say, skip=(), shown=lambda result: ""):
        """Each step of `names` not confirmed yet, in order: skipped ones saved as skipped, the
        others run by do_one(name) and their result saved as soon as it returns."""
        for name in names:
            if self.done(name):
                continue
            if name in skip:
                self.confirm(name, {"skipped": True})
                say("%s: skipped" % name)
                continue
            say("--- %s" % name)
            result = do_one(name)
            self.confirm(name, result)
            say("%s: confirmed%s" % (name, shown(result)))

    def board(self):
        """-> ({servo name: direction} the board was given mid-session, shipped or not)."""
        b = self.data.get("board") or {}
        return dict(b.get("directions") or {}), bool(b.get("shipped", True))

    def set_board(self, directions, shipped):
        self.data["board"] = {"directions": dict(directions), "shipped": bool(shipped)}
        self._save()

    def restore(self):
        """{board setting: value} to put back (a dry cycle slowed them), or None."""
        return self.data.get("restore")

    def set_restore(self, values):
        if values:
            self.data["restore"] = dict(values)
        else:
            self.data.pop("restore", None)
        self._save()

    def forget(self, name):
        if self.steps.pop(name, None) is not None:
            self._save()

    def _save(self):
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
