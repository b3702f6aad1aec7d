# Generated hostile files for the host's formats, through the commands a user runs: job files
# (`sim run --job`), teleop streams (`teleop --source FILE`), run records (`replay`). Each must end
# in one clear line on stderr and exit 2, never a traceback, never a hang (each command has a
# deadline well beyond what a refusal takes), never a silent acceptance.
import json

import pytest

from tests.support.cli import SUREPICK_BIN, surepick
from tests.support.needs import NEEDS_MICROPYTHON

# Each command meets its hostile file within 1 GiB of address space (the memory bound
# docs/safety-hostile-input.md states for a command reading a user's file): refused in one
# line, not grown until the kernel kills it.
MEMORY_BOUND = 1 << 30


def bounded(*args, timeout=120):
    import shutil
    import subprocess
    if shutil.which("prlimit") is None:
        return surepick(*args, timeout=timeout)
    return subprocess.run(["prlimit", "--as=%d" % MEMORY_BOUND, SUREPICK_BIN, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)

GOOD_JOB = {"format": "surepick-job", "version": 1,
            "pick": {"x_mm": 160.0, "y_mm": -60.0, "z_mm": 15.5, "pitch_deg": -90.0},
            "place": {"x_mm": 150.0, "y_mm": 80.0, "z_mm": 20.5, "pitch_deg": -90.0},
            "part_width_mm": 25.0}
HUGE = int("9" * 400)


def _job(**top):
    d = json.loads(json.dumps(GOOD_JOB))
    for k, v in top.items():
        if "." in k:
            a, b = k.split(".")
            d[a][b] = v
        else:
            d[k] = v
    return json.dumps(d).encode()


JOBS = {
    "a 400-digit pick.x_mm": (_job(**{"pick.x_mm": HUGE}), "pick.x_mm: must be a finite number"),
    "a 400-digit part_width_mm": (_job(part_width_mm=HUGE), "part_width_mm: must be a finite number"),
    "a 400-digit approach_height_mm": (_job(approach_height_mm=HUGE), "approach_height_mm: must be a finite"),
    "a 400-digit max_attempts": (_job(max_attempts=HUGE), "max_attempts: 999999999999999999"),
    "version 1.0": (_job(version=1.0), "version: this surepick reads version 1"),
    "version true": (_job(version=True), "version: this surepick reads version 1"),
    "nesting 30k deep": (b"[" * 30000 + b"]" * 30000, "nests too deep"),
    "nesting 100k deep": (b"[" * 100000 + b"]" * 100000, "larger than"),
    "binary": (bytes(range(256)) * 4, "not UTF-8"),
    "latin-1": (_job().replace(b'"format"', b'"f\xf6rmat"'), "not UTF-8"),
    "10 MB": (b" " * (10 << 20) + _job(), "larger than"),
}


@pytest.mark.parametrize("what", sorted(JOBS))
@pytest.mark.parametrize("verb", ["sim run", "job start"])
def test_a_hostile_job_file_is_one_clear_line(tmp_path, what, verb):
    data, needle = JOBS[what]
    p = tmp_path / "job.json"
    p.write_bytes(data)
    where = ["--out", tmp_path / "run"] if verb == "sim run" else ["--port", "socket://127.0.0.1:9"]
    r = bounded(*verb.split(), "--job", p, *where)   # (the file is read before the port)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and needle in r.stderr, r.stderr[-2000:]
    assert len(r.stderr) < 2000, r.stderr[:300]       # the 400 digits are not echoed back


# Small JSON files other commands read (host/json_file.py): config overrides, plant
# parameters, compare's tolerances, `config import`.
OBJECTS = {
    "nesting 100k deep": (b"[" * 100000 + b"]" * 100000, "nests too deep"),
    "a 5000-digit number": (b'{"x": ' + b"9" * 5000 + b"}", "is not valid JSON: Exceeds the limit (4300 digits)"),
    "NaN": (b'{"x": NaN}', "is not valid JSON: NaN is not a JSON number"),
    # a literal past a float's range reads as infinity: once, a config field's overflowed int()
    "1e999": (b'{"x": 1e999}', "is not valid JSON: 1e999 is too large a number"),
    "binary": (b"{" + bytes(range(128, 256)) + b"}", "is not UTF-8 text (byte 0x80 at offset 1)"),
    "2 MB": (b" " * (2 << 20) + b"{}", "is larger than 1048576 bytes"),
    "a list": (b"[1, 2]", "must hold a JSON object"),
}
OBJECT_VERBS = {
    "sim run --config": (lambda p, t: ["sim", "run", "--config", p, "--out", t / "run"], "config file"),
    "sim run --plant": (lambda p, t: ["sim", "run", "--plant", p, "--out", t / "run"], "plant file"),
    "sim sweep --plant": (lambda p, t: ["sim", "sweep", "--scenario", "nominal", "--plant", p, "--out", t / "sw"], "plant file"),
    "config import": (lambda p, t: ["config", "import", p, "--port", "socket://127.0.0.1:9"], "config file"),
    "compare --tolerances": (lambda p, t: ["compare", t, t, "--tolerances", p, "--out", t / "cmp"], "tolerances file"),
}


@pytest.mark.parametrize("what", sorted(OBJECTS))
@pytest.mark.parametrize("verb", sorted(OBJECT_VERBS))
def test_a_hostile_json_file_is_one_clear_line(tmp_path, what, verb):
    data, needle = OBJECTS[what]
    p = tmp_path / "in.json"
    p.write_bytes(data)
    args, kind = OBJECT_VERBS[verb]
    r = bounded(*args(p, tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert "%s %s %s" % (kind, p, needle) in r.stderr, r.stderr[-2000:]


def _sample(t, pose=None):
    pose = pose or [1, 0, 0, 0.1, 0, 1, 0, 1.0, 0, 0, 1, 0.2]
    return json.dumps({"t": t, "pose": pose, "buttons": {"clutch": True, "fine": False, "grip": 0.0}})


STREAMS = {
    "binary.jsonl": (b"\xff\xfe" + bytes(range(256)) * 8, ":1: not UTF-8"),
    "latin1.jsonl": ((_sample(0.0) + "\n").encode() + b'{"t": 0.1, "mark": "pl\xe4ce"}\n', ":2: not UTF-8"),
    "deep.jsonl": (b"[" * 50000 + b"\n", "nests too deep"),
    "inf_pose.jsonl": ((_sample(0.0) + "\n" + _sample(0.01, [1, 0, 0, 1e999, 0, 1, 0, 1, 0, 0, 1, 0]) + "\n")
                       .replace("Infinity", "1e999").encode(), ":2: pose entries"),
    "huge_int_pose.jsonl": ((_sample(0.0, [1, 0, 0, HUGE, 0, 1, 0, 1, 0, 0, 1, 0]) + "\n").encode(),
                            ":1: pose entries"),
    "jump_1e6.jsonl": ((_sample(0.0) + "\n" + _sample(1e6) + "\n").encode(), ":2: t=1e+06 is"),
    "jump_1e300.jsonl": ((_sample(0.0) + "\n" + _sample(1e300) + "\n").encode(), ":2: t=1e+300 is"),
    "inf_t.csv": (b"t,m00,m01,m02,m03,m10,m11,m12,m13,m20,m21,m22,m23,clutch,fine,grip\n"
                  b"inf,1,0,0,0,0,1,0,1,0,0,1,0,1,0,0\n", ":2: t must be a finite number"),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_hostile_teleop_stream_is_one_clear_line(tmp_path, name):
    data, needle = STREAMS[name]
    p = tmp_path / name
    p.write_bytes(data)
    r = bounded("teleop", "--source", p, "--target", "sim", "--viewer", "off")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and needle in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("opt", ["--heading-deg", "--scale", "--alpha", "--control-hz"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_a_non_finite_teleop_option_is_one_clear_line(tmp_path, opt, value):
    r = surepick("teleop", "--source", "keyboard", "--target", "sim", opt, value, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "must be a finite number" in r.stderr, r.stderr[-2000:]


def test_replay_refuses_a_scenario_named_like_a_path(tmp_path):
    run = tmp_path / "run"
    r = surepick("sim", "run", "--scenario", "nominal", "--out", run, timeout=300)
    assert r.returncode == 0, r.stderr
    meta = json.loads((run / "run.json").read_text())
    meta["scenario"] = "../../../tmp/evil"
    (run / "run.json").write_text(json.dumps(meta))
    r = surepick("replay", run, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "scenario must be a name" in r.stderr, r.stderr


# ---- a job refused on the board changes nothing there ----

def _flash_bytes(flash):
    return {str(p.relative_to(flash)): p.read_bytes() for p in sorted(flash.rglob("*")) if p.is_file()}


def _quiet_flash(flash, ps, con, board_ms=2000, tries=30):
    # the flash as it stays over board_ms of the board's own time (its writes at rest are done)
    import time
    before = _flash_bytes(flash)
    for _ in range(tries):
        t0, deadline = ps.now_ms, time.monotonic() + 120
        while ps.now_ms < t0 + board_ms and time.monotonic() < deadline:
            con.pump(0.05)
        now = _flash_bytes(flash)
        if now == before:
            return now
        before = now
    raise AssertionError("the board's flash never went quiet")


@NEEDS_MICROPYTHON
def test_a_job_refused_for_a_latched_fault_sets_nothing_on_the_board(tmp_path):
    # `job start --job` with an approach height on a board with a latched fault: refused, and
    # every file on its flash byte-identical (it once saved the height first, then was refused).
    pytest.importorskip("mujoco")
    from surepick.host.engines.vboard_world import board_in_world
    from surepick.shared_fsm import codes, link
    from tests.support.vboard import Console, deploy_firmware
    job = tmp_path / "job.json"
    job.write_bytes(_job(approach_height_mm=65.0, max_attempts=2))
    flash = tmp_path / "flash"
    deploy_firmware(flash)
    b = board_in_world(flash, "nominal", 3)
    with b:
        con = Console(b.address)
        try:
            assert con.wait(lambda f: f.ftype == link.T_TELEMETRY, 60) is not None
            _quiet_flash(flash, b.world_service, con)
            con.send(link.job(7, (160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), 25000))
            r = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == 7, 30)
            assert r is not None and r.fields[1] == link.OK, r
            assert con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[2] == codes.K_TRANSITION, 60) is not None
            con.send(link.request(link.T_ABORT, 8, ()))
            r = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == 8, 30)
            assert r is not None and r.fields[1] == link.OK, r
            before = _quiet_flash(flash, b.world_service, con)
        finally:
            con.close()
        r = surepick("job", "start", "--job", job, "--port", b.address, timeout=120)
        assert r.returncode == 1 and "refused" in r.stderr and "job clear" in r.stderr, r.stdout + r.stderr
        assert "approach_height_um" not in r.stdout, r.stdout
        con = Console(b.address)
        try:
            after = _quiet_flash(flash, b.world_service, con)
        finally:
            con.close()
    assert before == after, sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert b"approach_height_um" not in before.get("config.json", b"")


SPARSE = {   # a 2 GiB file of NUL bytes with no newline (sparse: no disk), where each command reads one
    "teleop stream .jsonl": (lambda p, t: ["teleop", "--source", p, "--target", "sim", "--viewer", "off"],
                             "big.jsonl", ":1: longer than 65536 characters"),
    "teleop stream .csv": (lambda p, t: ["teleop", "--source", p, "--target", "sim", "--viewer", "off"],
                           "big.csv", ":1: longer than 65536 characters"),
    "job file": (lambda p, t: ["sim", "run", "--job", p, "--out", t / "run"], "big.json", "larger than 65536 bytes"),
    "config file": (lambda p, t: ["sim", "run", "--config", p, "--out", t / "run"], "big.json",
                    "is larger than 1048576 bytes"),
    "arm description": (lambda p, t: ["sim", "run", "--arm", p, "--out", t / "run"], "big.json",
                        "2147483648 bytes, a description is at most 65536"),
}


@pytest.mark.parametrize("what", sorted(SPARSE))
def test_a_file_of_gigabytes_is_refused_within_the_memory_bound(tmp_path, what):
    args, name, needle = SPARSE[what]
    p = tmp_path / name
    with open(p, "wb") as f:
        f.truncate(2 << 30)
    r = bounded(*args(p, tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert needle in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
