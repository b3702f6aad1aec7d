# Item 10 of the bench-day issue: the host tools refuse bad run records cleanly. A valid record
# from `surepick sim run` (cut to its first 1.2 s of ticks so a fit finishes quickly) is damaged
# the ways the issue names, then arbitrarily (hypothesis); replay, compare and fit, run as a user
# runs them, must exit 0, 1 or 2 within a bounded time and never print a traceback; a refusal is
# one line naming the file and the field.
import concurrent.futures
import json
import re
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from surepick.host.arms import files, presets
from tests.support.cli import surepick
from tests.support.short_record import keep_first_ticks

VERB_TIMEOUT_S = 120
FUZZ_EXAMPLES = 40
CLI_MANY = Path(__file__).resolve().parents[2] / "support" / "cli_many.py"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz") / "base"
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "7", "--out", d, "--no-plots", timeout=300)
    assert r.returncode == 0, r.stderr
    keep_first_ticks(d)
    return d


def _verbs(run, base, out):
    return {"replay": ["replay", run, "--quiet"],
            "compare": ["compare", base, run, "--out", out / "cmp"],
            "fit": ["fit", run, "--out", out / "plant.json", "--max-evals", "4"]}


def _run_all(run, base, out):
    # -> {verb: (exit code, stderr, seconds)}, the three verbs at once.
    def one(args):
        t0 = time.monotonic()
        r = surepick(*args, timeout=VERB_TIMEOUT_S)
        return r.returncode, r.stderr, time.monotonic() - t0
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futs = {v: pool.submit(one, a) for v, a in _verbs(run, base, out).items()}
        return {v: f.result() for v, f in futs.items()}


def _clean(results):
    for verb, (code, err, secs) in results.items():
        assert code in (0, 1, 2), (verb, code, err)
        assert "Traceback" not in err, (verb, err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith("surepick %s: " % verb), (verb, err)
        assert secs < VERB_TIMEOUT_S


def _edit_json(path, fn):
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d))


def _edit_cycle(path, fn):
    c = json.loads(path.read_text().splitlines()[0])
    fn(c)
    path.write_text(json.dumps(c) + "\n")


def _set_cell(path, column, value, line=5):
    # line: 0-based index into the file's lines (0 is the header)
    rows = path.read_text().split("\n")
    header = rows[0].split(",")
    cells = rows[line].split(",")
    cells[header.index(column)] = value
    rows[line] = ",".join(cells)
    path.write_text("\n".join(rows))


DAMAGE = {
    # the list, with what the one line must name
    "cycles_many": (lambda d: _edit_json(d / "run.json", lambda m: m.update(cycles="many")),
                    "run.json: cycles must be a whole number"),
    "config_not_integer": (lambda d: _edit_json(d / "run.json", lambda m: m["config"].update(grasp_dwell_ms=3.5)),
                           "run.json: config.grasp_dwell_ms must be a whole number 0..5000"),
    "pick_not_numeric": (lambda d: _edit_cycle(d / "cycles.jsonl", lambda c: c["job"]["pick_um"].__setitem__(1, "y")),
                         "cycles.jsonl line 1: job.pick_um must be a list of 4 integers"),
    "ticks_binary": (lambda d: (d / "ticks.csv").write_bytes(bytes(range(256)) * 40),
                     "ticks.csv is not a text file"),
    "period_zero": (lambda d: _edit_json(d / "run.json", lambda m: m.update(loop_period_ms=0)),
                    "run.json: loop_period_ms must be a whole number 1..50"),
    "period_nan": (lambda d: (d / "run.json").write_text(re.sub(
        r'"loop_period_ms": \d+', '"loop_period_ms": NaN', (d / "run.json").read_text())),
        "run.json is not valid JSON (NaN is not a JSON number)"),
    "seed_huge": (lambda d: _edit_json(d / "run.json", lambda m: m.update(seed=2 ** 70)),
                  "run.json: seed must be a whole number"),
    "state_out_of_range": (lambda d: _set_cell(d / "ticks.csv", "state", "12"),
                           "ticks.csv line 6: state must be a whole number 0..8, got 12"),
    "tick_not_integer": (lambda d: _set_cell(d / "ticks.csv", "pot_counts", "1.5"),
                         "ticks.csv line 6: pot_counts must be a whole number"),
    "event_unknown_state": (lambda d: _set_cell(d / "events.csv", "to", "FLYING", line=2),
                            "events.csv line 3: to must be a state name"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_each_named_damage_is_one_clear_line_from_every_verb(base, tmp_path, damage):
    run = tmp_path / "run"
    shutil.copytree(base, run)
    fn, needle = DAMAGE[damage]
    fn(run)
    results = _run_all(run, base, tmp_path)
    _clean(results)
    for verb, (code, err, secs) in results.items():
        assert code == 2 and needle in err, (verb, err)
    assert not (tmp_path / "plant.json").exists() and not (tmp_path / "cmp").exists()


def test_fit_to_a_bad_out_fails_before_fitting(base, tmp_path):
    r = surepick("fit", base, "--out", tmp_path / "no" / "such" / "dir" / "p.json")
    assert r.returncode == 2 and "its directory" in r.stderr and "does not exist" in r.stderr, r.stderr
    assert "evaluation" not in r.stdout + r.stderr      # the fit never started (it says each evaluation)


def test_fit_onto_one_of_its_inputs_keeps_it_and_fails_before_fitting(base, tmp_path):
    # --out onto the record's run.json once replaced the run's metadata with the fitted plant.
    run = tmp_path / "run"
    shutil.copytree(base, run)
    arm = tmp_path / "arm.toml"
    arm.write_text(files.to_toml(presets.get("reference")))
    start = tmp_path / "start.json"
    start.write_text("{}")
    cases = [(["--out", run / "run.json"], "a file of the run record"),
             (["--out", start, "--start", start], "the --start plant"),
             (["--out", tmp_path / "p.json", "--arm", arm, "--arm-out", arm], "the --arm description")]
    for args, needle in cases:
        before = {p: p.read_bytes() for p in [arm, start] + sorted(run.iterdir())}
        r = surepick("fit", run, *args)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and len(err) == 1 and needle in err[0], err
        assert "overwritten" in err[0] and "evaluation" not in r.stdout + r.stderr
        assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("arg", ["-1", str(2 ** 70), "x"])
def test_stand_in_seed_out_of_range_is_usage(tmp_path, arg):
    r = surepick("fit", "--stand-in", arg, "--out", tmp_path / "h.json")
    assert r.returncode == 2 and "a seed is a whole number 0..2147483647" in r.stderr, r.stderr
    assert not (tmp_path / "h.json").exists()


# ---- arbitrary damage ----------------------------------------------------------------------------

_VALUES = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=6), st.none(), st.booleans(), st.lists(st.integers(-5, 5), max_size=5),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_CELLS = st.one_of(st.integers(-2 ** 70, 2 ** 70).map(str), st.text(max_size=6).filter(lambda s: "\n" not in s),
                   st.sampled_from(["", "nan", "1.5", "-0", "IDLE", "transition", "VERIFY_PASS", "1e3"]))


def _paths(obj, prefix=()):
    # every key path into a JSON object
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def damage(draw, base_files):
    name = draw(st.sampled_from(sorted(base_files)))
    text = base_files[name]
    how = draw(st.sampled_from(["value", "delete", "truncate", "bytes"] if name.endswith(".json") or
                               name.endswith(".jsonl") else ["cell", "truncate", "bytes", "header"]))
    if how in ("value", "delete"):
        lines = text.splitlines()
        obj = json.loads(lines[0] if name.endswith(".jsonl") else text)
        path = draw(st.sampled_from(_paths(obj)))
        parent = obj
        for k in path[:-1]:
            parent = parent[k]
        if how == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(_VALUES)
        new = json.dumps(obj, allow_nan=True)
        return name, (new + "\n" if name.endswith(".jsonl") else new).encode()
    data = text.encode()
    if how == "truncate":
        return name, data[:draw(st.integers(0, len(data)))]
    if how == "bytes":
        at = draw(st.integers(0, len(data)))
        return name, data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    rows = text.split("\n")
    if how == "header":
        cols = rows[0].split(",")
        del cols[draw(st.integers(0, len(cols) - 1))]
        rows[0] = ",".join(cols)
        return name, "\n".join(rows).encode()
    line = draw(st.integers(1, max(1, len(rows) - 2)))
    cells = rows[line].split(",")
    if cells == [""]:
        return name, data
    cells[draw(st.integers(0, len(cells) - 1))] = draw(_CELLS)
    rows[line] = ",".join(cells)
    return name, "\n".join(rows).encode()


def _run_many(runs, base):
    # -> one {verb: (exit code, stderr, seconds)} per run: each verb on every run, all of one
    # verb's commands in one process (tests/support/cli_many.py: the console script's function,
    # a command at a time), the three verbs' processes at once
    def one(verb):
        commands = [[str(a) for a in _verbs(run, base, run.parent)[verb]] for run in runs]
        p = subprocess.run([sys.executable, str(CLI_MANY), str(VERB_TIMEOUT_S)], input=json.dumps(commands),
                           capture_output=True, text=True, timeout=VERB_TIMEOUT_S * len(runs) + 60)
        assert p.returncode == 0, (verb, p.stderr[-3000:])
        return [(code, err, secs) for code, _, err, secs in json.loads(p.stdout)]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futs = {v: pool.submit(one, v) for v in ("replay", "compare", "fit")}
        per_verb = {v: f.result() for v, f in futs.items()}
    return [{v: per_verb[v][i] for v in per_verb} for i in range(len(runs))]


@pytest.mark.slow
def test_arbitrary_damage_never_gives_a_traceback(base, tmp_path_factory):
    # Hypothesis draws the damaged records (each its own directory); the verbs then run on all
    # of them, a process per verb rather than per command. The cost of that: no shrinking, so
    # a failure names the drawn damage itself (file, and the bytes written).
    files = {n: (base / n).read_text() for n in ("run.json", "cycles.jsonl", "events.csv", "ticks.csv")}
    cases = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(damage(files))
    def draw(change):
        run = tmp_path_factory.mktemp("case") / "run"
        shutil.copytree(base, run)
        name, data = change
        (run / name).write_bytes(data)
        cases.append((run, name, data))

    draw()
    assert len(cases) >= FUZZ_EXAMPLES // 2, len(cases)     # not a trivially small draw
    for (run, name, data), results in zip(cases, _run_many([c[0] for c in cases], base)):
        try:
            _clean(results)
        except AssertionError as e:
            raise AssertionError("damage to %s: %r" % (name, data[:400])) from e


def test_nan_in_json_is_still_refused_when_python_would_accept_it(base, tmp_path):
    # json.dumps writes NaN by default: the loader must not take it for a number.
    run = tmp_path / "run"
    shutil.copytree(base, run)
    _edit_cycle(run / "cycles.jsonl", lambda c: c.update(sim_ms=math.nan))
    r = surepick("replay", run)
    assert r.returncode == 2 and "cycles.jsonl line 1 is not valid JSON (NaN is not a JSON number)" in r.stderr
