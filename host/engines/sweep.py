# A parameter sweep's plan: a grid of cells (one value per axis), every cell run over the same
# seeds. Axes are scenario parameters, state-machine config fields, plant parameters and the
# part's mass or friction; every value of every axis, and every cell, is checked here before any
# work starts. run_job is the one function that runs a job, whichever backend calls it
# (engines/sweep_run.py drives the backends).
import functools
import hashlib
import itertools
import json
import math
import os
import socket
from decimal import Decimal, InvalidOperation

from surepick.shared_fsm.config import FIELDS, Config
from surepick.sim import scenarios
from surepick.sim.params import SERVO_NAMES, PlantParams
from surepick.sim.plant import PARTS
from surepick.host.user_error import BadInput

KINDS = ("param", "config", "plant", "part")
PART_KEYS = ("mass_g", "friction")          # the part properties an axis may vary
MAX_VALUES = 1000                            # per axis: a typo like 0:1000:0.001 is caught
MAX_CELLS = 100000                           # per grid: the plan is held in memory
MAX_SEEDS = 10000                            # per cell
MAX_CYCLES = 200000                          # per sweep: every (cell, seed) is planned in memory at once
MAX_SEED = 2 ** 31 - 1                       # seeds name numpy/MuJoCo random streams
PLAN_FORMAT = 1


class SweepError(BadInput, ValueError):
    """A sweep that cannot start or go on: bad axes or values, a plan that does not match."""


# ---- axis values ----

def parse_values(text):
    """'start:stop:step' (stop included when the steps land on it), 'a,b,c' or one number ->
    a list of Decimals, exact (0:1:0.1 gives 0.3, not 0.30000000000000004)."""
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise SweepError("range %r must be start:stop:step" % text)
        start, stop, step = (_number(p, text) for p in parts)
        if step <= 0:
            raise SweepError("range %r: the step must be above 0" % text)
        if stop < start:
            raise SweepError("range %r: stop is below start" % text)
        n = int((stop - start) / step) + 1
        if n > MAX_VALUES:
            raise SweepError("range %r has %d values (at most %d per axis)" % (text, n, MAX_VALUES))
        return [start + i * step for i in range(n)]
    if text.count(",") >= MAX_VALUES:
        raise SweepError("list %r has more than %d values (at most %d per axis)" % (
            text[:40] + "...", MAX_VALUES, MAX_VALUES))
    values = [_number(p, text) for p in text.split(",")]
    if len(set(values)) != len(values):
        raise SweepError("list %r repeats a value" % text)
    return values


def _number(s, whole):
    try:
        d = Decimal(s.strip())
    except InvalidOperation:
        raise SweepError("%r in %r is not a number" % (s.strip(), whole)) from None
    if not d.is_finite():
        raise SweepError("%r in %r is not a finite number" % (s.strip(), whole))
    return d


def fmt(v):
    """A value as cells.csv and the plots write it: integers without a point, floats shortest."""
    if isinstance(v, float) and v.is_integer():
        return "%d" % v
    return repr(v) if isinstance(v, float) else str(v)


# ---- axes ----

class Axis:
    """kind: param | config | plant | part; key: the parameter, field, plant path
    (e.g. rail.source_mohm, servos.gripper.speed_s_per_60deg_4v8) or part property."""

    def __init__(self, kind, key, values):
        self.kind = kind
        self.key = key
        self.values = values

    @property
    def name(self):
        # a scenario parameter is named bare (offset_mm), the others with their kind
        return self.key if self.kind == "param" else "%s.%s" % (self.kind, self.key)

    def to_dict(self):
        return {"name": self.name, "kind": self.kind, "key": self.key, "values": self.values}


def parse_axis(spec):
    """'KIND.KEY=VALUES' (or 'KEY=VALUES' for a scenario parameter) -> (kind, key, Decimals)."""
    if "=" not in spec:
        raise SweepError("axis %r must be NAME=VALUES" % spec)
    name, text = (s.strip() for s in spec.split("=", 1))
    kind, key = name.split(".", 1) if "." in name else ("param", name)
    if kind not in KINDS:
        raise SweepError("axis %r: unknown kind %r (param.KEY, config.FIELD, plant.PATH or part.%s)"
                         % (name, kind, "|".join(PART_KEYS)))
    try:
        return kind, key, parse_values(text)
    except SweepError as e:
        raise SweepError("axis %s: %s" % (name, e)) from None


_CONFIG_FIELDS = {f[0]: f for f in FIELDS}


@functools.lru_cache(maxsize=None)
def _plant_leaf(path):
    # -> (default value, a function value -> nested plant dict) for a dotted PlantParams path,
    # or SweepError naming what exists there.
    default = PlantParams().to_dict()
    parts = path.split(".")
    node, trail = default, []
    for i, p in enumerate(parts):
        if isinstance(node, list):               # servos: by name
            if p not in SERVO_NAMES:
                raise SweepError("plant.%s: no servo %r (servos: %s)" % (path, p, ", ".join(SERVO_NAMES)))
            trail.append(SERVO_NAMES.index(p))
            node = node[SERVO_NAMES.index(p)]
        elif isinstance(node, dict) and p in node:
            trail.append(p)
            node = node[p]
        else:
            known = sorted(node) if isinstance(node, dict) else []
            raise SweepError("plant.%s: no parameter %r at %s (there: %s)" % (
                path, p, ".".join(parts[:i]) or "the top", ", ".join(known)))
    if isinstance(node, (dict, list, tuple, str)) or isinstance(node, bool):
        raise SweepError("plant.%s is not a number that can be swept" % path)

    def nest(value):
        d = value
        for step in reversed(trail):
            if isinstance(step, int):
                servos = [{} for _ in SERVO_NAMES]
                servos[step] = d
                d = servos
            else:
                d = {step: d}
        return d
    return node, nest


def _typed(kind, key, d):
    # A Decimal as the value the axis's target takes: config fields are integers, plant
    # fields take their default's type, parameters and part properties are floats.
    if kind == "config" or (kind == "plant" and isinstance(_plant_leaf(key)[0], int)):
        if d != d.to_integral_value():
            raise SweepError("%s must be an integer" % ("config field" if kind == "config" else "plant parameter"))
        return int(d)
    if not math.isfinite(float(d)):
        raise SweepError("is too large")
    return float(d)


def merge_plant(base, extra):
    # Deep merge of two plant-parameter dicts (servos merged by index).
    out = dict(base)
    for k, v in extra.items():
        if k == "servos":
            old = out.get("servos") or [{} for _ in SERVO_NAMES]
            out["servos"] = [dict(a, **b) for a, b in zip(old, v)]
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = dict(out[k], **v)
        else:
            out[k] = v
    return out


def _check_plant_value(key, v):
    # Physical sense of a plant value (the dataclasses check no ranges): offsets and trims may be
    # negative, everything else is a magnitude; the servo sense is 0 or 1.
    leaf = key.split(".")[-1]
    if leaf == "inverted" and v not in (0, 1):
        raise SweepError("must be 0 or 1")
    if v < 0 and "offset" not in leaf and "trim" not in leaf:
        raise SweepError("must not be negative")
    if v == 0 and leaf.startswith(("speed_", "stall_", "counts_per_", "divider", "band_", "armature",
                                   "stiffness", "nominal_", "servo_frame")):
        raise SweepError("must be above 0")


# ---- the plan ----

class Plan:
    """scenario; axes (those with two or more values, in the order given); fixed (one-value axes,
    by name); config and plant: base overrides under every cell; seeds first_seed .. +seeds-1;
    arm: the arm's description (a dict, Arm.to_dict()) or None for the reference arm."""

    def __init__(self, scenario, axes, fixed=None, config=None, plant=None, first_seed=0, seeds=1, chunk=4,
                 arm=None):
        self.scenario = scenario
        self.arm = arm
        self.axes = list(axes)
        self.fixed = list(fixed or [])           # Axis objects with one value
        self.config = dict(config or {})
        self.plant = dict(plant or {})
        self.first_seed = int(first_seed)
        self.seeds = int(seeds)
        self.chunk = int(chunk)
        self.cells = list(itertools.product(*[a.values for a in self.axes])) if self.axes else [()]

    @property
    def seed_list(self):
        return list(range(self.first_seed, self.first_seed + self.seeds))

    def cell_values(self, i):
        """{axis name: value} of cell i."""
        return {a.name: v for a, v in zip(self.axes, self.cells[i])}

    def settings(self, i):
        """What a job of cell i runs with: scenario, params, config, plant (a dict), part."""
        s = {"scenario": self.scenario, "params": {}, "config": dict(self.config), "plant": dict(self.plant),
             "part": {}, "arm": self.arm}
        for a, v in [(f, f.values[0]) for f in self.fixed] + list(zip(self.axes, self.cells[i])):
            if a.kind == "param":
                s["params"][a.key] = v
            elif a.kind == "config":
                s["config"][a.key] = v
            elif a.kind == "plant":
                s["plant"] = merge_plant(s["plant"], _plant_leaf(a.key)[1](v))
            else:
                s["part"][a.key] = v
        return s

    def jobs(self, skip=()):
        """(cell, seed) pairs in cell order, without those in skip."""
        skip = set(skip)
        return [(c, s) for c in range(len(self.cells)) for s in self.seed_list if (c, s) not in skip]

    def chunks(self, skip=()):
        """The work, in chunks of at most `chunk` cycles that never span two cells (a cell is done
        as soon as its own chunks are). -> [(chunk id, [job, ...])]; a job is (cell, seed, settings)."""
        out, cur, cur_cell = [], [], None
        for c, s in self.jobs(skip):
            if cur and (c != cur_cell or len(cur) >= self.chunk):
                out.append(cur)
                cur = []
            cur_cell = c
            cur.append((c, s, self.settings(c)))
        if cur:
            out.append(cur)
        return list(enumerate(out))

    def identity(self):
        # What makes two plans the same sweep (the chunk size does not).
        d = {"format": PLAN_FORMAT, "scenario": self.scenario, "axes": [a.to_dict() for a in self.axes],
             "fixed": [a.to_dict() for a in self.fixed], "config": self.config, "plant": self.plant,
             "first_seed": self.first_seed, "seeds": self.seeds}
        if self.arm is not None:            # (a reference arm's plan reads as it always did)
            d["arm"] = self.arm
        return d

    def fingerprint(self):
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()

    def to_dict(self):
        d = self.identity()
        d["chunk"] = self.chunk
        d["cells"] = len(self.cells)
        d["fingerprint"] = self.fingerprint()
        return d

    @classmethod
    def from_dict(cls, d):
        """A stored plan (sweep.json), checked as a new one is: its shape here, then every axis,
        value, cell, seed and override through make_plan, which must give back the same plan
        (anything make_plan would not have written, e.g. NaN or a value off its type, differs)."""
        if not isinstance(d, dict):
            raise SweepError("the sweep plan is not a JSON object")
        if d.get("format") != PLAN_FORMAT or isinstance(d.get("format"), bool):
            raise SweepError("sweep plan format %r is not %d" % (d.get("format"), PLAN_FORMAT))
        known = ("format", "scenario", "axes", "fixed", "config", "plant", "first_seed", "seeds", "chunk",
                 "cells", "fingerprint", "code", "command", "arm")
        for k in d:
            if k not in known:
                raise SweepError("the sweep plan has an unknown key %r" % k)
        for k, t in (("scenario", str), ("axes", list), ("fixed", list), ("config", dict), ("plant", dict),
                     ("first_seed", int), ("seeds", int), ("chunk", int)):
            if not isinstance(d.get(k), t) or isinstance(d.get(k), bool):
                raise SweepError("the sweep plan's %r is missing or not a %s" % (k, t.__name__))
        specs = []
        for where in ("axes", "fixed"):
            for i, a in enumerate(d[where]):
                if (not isinstance(a, dict) or a.get("kind") not in KINDS or not isinstance(a.get("key"), str)
                        or not isinstance(a.get("values"), list) or not a["values"] or len(a["values"]) > MAX_VALUES
                        or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                               for v in a["values"])):
                    raise SweepError("the sweep plan's %s[%d] is not an axis of finite numbers" % (where, i))
                if (where == "axes") != (len(a["values"]) > 1):
                    raise SweepError("the sweep plan's %s[%d] has %d value(s)" % (where, i, len(a["values"])))
                name = a["key"] if a["kind"] == "param" else "%s.%s" % (a["kind"], a["key"])
                specs.append("%s=%s" % (name, ",".join(repr(v) for v in a["values"])))
        arm = None
        if d.get("arm") is not None:
            from surepick.shared_fsm.arm import ArmError, validate
            try:
                arm = validate(d["arm"])
            except (ArmError, TypeError, AttributeError) as e:
                raise SweepError("the sweep plan's arm: %s" % e) from None
        plan = make_plan(d["scenario"], specs, d["config"], d["plant"], d["first_seed"], d["seeds"], d["chunk"], arm)
        stored = {"format": PLAN_FORMAT, "scenario": d["scenario"], "axes": d["axes"], "fixed": d["fixed"],
                  "config": d["config"], "plant": d["plant"], "first_seed": d["first_seed"], "seeds": d["seeds"],
                  "arm": d.get("arm")}
        for k, v in plan.identity().items():
            if json.dumps(v, sort_keys=True) != json.dumps(stored[k], sort_keys=True):
                raise SweepError("the sweep plan's %r is not what its own values give: %s" % (k, json.dumps(stored[k])))
        return plan

    def differs_from(self, other):
        """None when both plans are one sweep, else the first thing that differs, in words."""
        a, b = self.identity(), other.identity()
        for k in list(a) + [k for k in b if k not in a]:
            va, vb = a.get(k), b.get(k)
            if va != vb:
                if k == "arm":                  # the arm by its name (the reference when none is given)
                    va, vb = (v["name"] if v else "reference" for v in (va, vb))
                return "%s: %s here, %s in the stored plan" % (k, json.dumps(va), json.dumps(vb))
        return None


def make_plan(scenario, axis_specs, config=None, plant=None, first_seed=0, seeds=1, chunk=4, arm=None):
    """axis_specs: ['offset_mm=0:14:1', 'config.grasp_dwell_ms=250,350', ...]. Every value of every
    axis and every cell is checked before this returns; SweepError names the bad one. arm: an Arm
    (None: the reference arm)."""
    if seeds < 1 or seeds > MAX_SEEDS:
        raise SweepError("--seeds must be 1..%d (more seeds: several sweeps with --seed further on)" % MAX_SEEDS)
    if first_seed < 0 or first_seed + seeds - 1 > MAX_SEED:
        raise SweepError("--seed must be 0..%d, with all its seeds" % (MAX_SEED - seeds + 1))
    if chunk < 1:
        raise SweepError("--chunk must be at least 1")
    try:
        sc = scenarios.get(scenario)
    except ValueError as e:
        raise SweepError(str(e)) from None
    try:
        Config(config or {})
    except (ValueError, KeyError) as e:
        raise SweepError("--config: %s" % e) from None
    try:
        PlantParams.from_dict(plant or {})
    except (ValueError, KeyError, TypeError) as e:
        raise SweepError("--plant: %s" % (e.args[0] if isinstance(e, KeyError) else e)) from None
    axes, fixed, seen = [], [], set()
    for spec in axis_specs:
        kind, key, decimals = parse_axis(spec)
        ax = Axis(kind, key, [])
        if ax.name in seen:
            raise SweepError("axis %s is given twice" % ax.name)
        seen.add(ax.name)
        _check_key(sc, kind, key)
        for d in decimals:
            try:
                v = _typed(kind, key, d)
                _check_value(sc, kind, key, v, config or {}, plant or {})
            except SweepError as e:
                raise SweepError("axis %s value %s: %s" % (ax.name, d, e)) from None
            ax.values.append(v)
        (axes if len(ax.values) > 1 else fixed).append(ax)
    cells = math.prod(len(a.values) for a in axes)
    if cells > MAX_CELLS:
        raise SweepError("the grid has %d cells (at most %d): fewer values per axis" % (cells, MAX_CELLS))
    if cells * seeds > MAX_CYCLES:
        raise SweepError("%d cells x %d seeds is %d cycles (at most %d per sweep): fewer seeds or values, or "
                         "several sweeps" % (cells, seeds, cells * seeds, MAX_CYCLES))
    plan = Plan(sc.name, axes, fixed, config, plant, first_seed, seeds, chunk,
                arm.to_dict() if arm is not None else None)
    _check_cells(plan, sc)
    return plan


def _check_key(sc, kind, key):
    if kind == "param" and key not in sc.params:
        raise SweepError("scenario '%s' has no parameter '%s' (its parameters: %s)"
                         % (sc.name, key, ", ".join(sorted(sc.params)) or "none"))
    if kind == "config" and key not in _CONFIG_FIELDS:
        raise SweepError("no config field '%s' (fields: see shared_fsm/config.py)" % key)
    if kind == "plant":
        _plant_leaf(key)
    if kind == "part":
        if key not in PART_KEYS:
            raise SweepError("part.%s: the part's %s can be swept" % (key, " or ".join(PART_KEYS)))
        if _scenario_part(sc) is None:
            raise SweepError("part.%s: scenario '%s' has no part" % (key, sc.name))


def _scenario_part(sc):
    # The part the scenario puts on the pad (None for part_missing, servo_stall).
    return sc.setup(sc.resolve(None), scenarios.rng_for(0, 0))["part"]


def _check_value(sc, kind, key, v, config, plant):
    try:
        if kind == "param":
            sc.resolve({key: v})
        elif kind == "config":
            Config(dict(config, **{key: v}))
        elif kind == "plant":
            _check_plant_value(key, v)
            PlantParams.from_dict(merge_plant(plant, _plant_leaf(key)[1](v)))
        elif not (v > 0 and math.isfinite(v)):
            raise SweepError("must be above 0")
    except SweepError:
        raise
    except (ValueError, KeyError, TypeError) as e:
        raise SweepError(e.args[0] if isinstance(e, KeyError) else str(e)) from None


def _check_cells(plan, sc):
    # Combinations: config relations (crush above grip current, ...) and scenario parameters
    # hold cell by cell; each distinct plant (parameters and part) builds as a MuJoCo model.
    from surepick.sim.plant import Plant
    built = set()
    for i in range(len(plan.cells)):
        s = plan.settings(i)
        where = ", ".join("%s=%s" % (k, fmt(v)) for k, v in plan.cell_values(i).items()) or "the one cell"
        try:
            sc.resolve(s["params"])
            Config(s["config"])
            variant = json.dumps([s["plant"], s["part"]], sort_keys=True)
            if (s["plant"] or s["part"]) and variant not in built:
                built.add(variant)
                Plant(part=part_spec(_scenario_part(sc), s["part"]), params=s["plant"], arm=_arm(s))
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
            raise SweepError("cell %s: %s" % (where, e.args[0] if isinstance(e, KeyError) else e)) from None


# ---- running one job (on whichever backend) ----

def part_spec(part, overrides):
    """The named part with its mass/friction replaced (a spec plant.Plant takes), or the name."""
    if not overrides or part is None:
        return part
    return dict(PARTS[part], name=part, **overrides)


class _PartVariant:
    # The scenario as it is, but its part weighs or grips differently (world.py builds the plant
    # from setup["part_spec"] when there is one; the pick pose still comes from the part's name).
    def __init__(self, sc, overrides):
        self._sc = sc
        self._overrides = overrides

    def __getattr__(self, name):
        return getattr(self._sc, name)

    def setup(self, values, rng, arm=None):
        s = self._sc.setup(values, rng, arm)
        s["part_spec"] = part_spec(s["part"], self._overrides)
        return s


def scenario_for(settings):
    sc = scenarios.get(settings["scenario"])
    return _PartVariant(sc, settings["part"]) if settings.get("part") else sc


def run_job(job, record_trajectory=False):
    """One cycle of one cell: (cell, seed, settings) -> its result (what results.jsonl keeps), and
    with record_trajectory also (record, trajectory, model hash) for a report."""
    from surepick.host.engines.inproc import run_cycle
    cell, seed, s = job
    rec, traj, run = run_cycle(scenario_for(s), s["params"], seed=seed, cycle=0, plant_params=s["plant"] or None,
                               cfg_overrides=s["config"] or None, record_trajectory=record_trajectory, arm=_arm(s))
    result = {"cell": cell, "seed": seed}
    for k in ("fsm_outcome", "fsm_fault", "fault_state", "attempts", "judge_outcome", "judge_reason",
              "false_success", "false_failure", "expected", "controller_restarts", "sim_ms", "wall_s"):
        result[k] = rec[k]
    result["cycle_ms"] = rec["cycle_ms"]
    result["probes"] = rec["probes"]
    result["search_moved_mm"] = rec["judge"]["approach"]["part_moved_mm"]
    result["worker"] = "%s:%d" % (socket.gethostname(), os.getpid())   # provenance, not compared
    if not record_trajectory:
        return result
    rec["scenario"] = s["scenario"]
    return result, rec, traj, run.plant.model_hash()


def _arm(settings):
    # The cell's Arm from its description (None: the reference arm).
    d = settings.get("arm")
    if d is None:
        return None
    from surepick.shared_fsm import arm as arm_mod
    return arm_mod.validate(d)


def run_chunk(jobs):
    """A chunk of jobs -> {"code": what ran them, "results": [...]} (the backends' one task)."""
    return {"code": code_identity(), "results": [run_job(j) for j in jobs]}


def run_drill(job):
    """A failing cycle again, with its trajectory and tick trace, for its report."""
    result, rec, traj, model_hash = run_job(job, record_trajectory=True)
    return {"code": code_identity(), "result": result, "record": rec, "trajectory": traj,
            "model_hash": model_hash}


_CODE = None


def code_identity():
    """The versions and a hash of surepick's own source that produced a result: a worker whose
    code or MuJoCo differs would make its cells incomparable (engines/sweep_run.py refuses them)."""
    global _CODE
    if _CODE is None:
        from surepick.host.engines.summary import versions
        from surepick.host.source_tree import CODE_FOLDERS, PACKAGE
        root = str(PACKAGE)
        h = hashlib.sha256()
        paths = []
        for folder in CODE_FOLDERS:
            for d, dirs, files in os.walk(os.path.join(root, folder)):
                dirs[:] = [x for x in dirs if x not in ("__pycache__", "node", "rp2040")]   # pruned as walked
                paths += [os.path.join(d, f) for f in files if f.endswith((".py", ".xml", ".json"))]
        for path in sorted(paths):
            h.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as fh:
                h.update(fh.read())
        v = versions()
        _CODE = {"surepick": v["surepick"], "mujoco": v["mujoco"], "numpy": v["numpy"],
                 "python": ".".join(v["python"].split(".")[:2]), "source_sha256": h.hexdigest()[:16]}
    return _CODE
