# Nothing lost by running two things at once (issue 24, item 3): an output directory has one
# writer at a time. A second `sim batch` (or `sim run`, `sim sweep`; --resume and --force too)
# into an --out that another one is writing is refused with the owner's pid, and the first one's
# file keeps exactly one record per finished seed; a run killed mid-write (its lock then belongs to
# nobody, its last line torn) is taken over and resumed with every finished cycle kept.
import json
import os
import signal
import subprocess
import time

from tests.support.cli import SUREPICK_BIN, surepick


def _lines(path):
    return path.read_bytes().split(b"\n") if path.exists() else []


def _records(path):
    # every whole line of a cycles.jsonl, parsed (a torn last line has no newline: not whole)
    data = path.read_bytes()
    return [json.loads(line) for line in data[:data.rfind(b"\n") + 1].splitlines()]


def _start_batch(out, count, *extra):
    # In a session of its own: a crash is played by killing its whole group (the batch and its
    # worker process) at once.
    return subprocess.Popen([SUREPICK_BIN, "sim", "batch", "--scenario", "nominal", "--count", str(count),
                             "--jobs", "1", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_records(path, n, proc, timeout=240):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and len(_records(path)) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("%s never held %d records" % (path, n))


def test_a_second_writer_is_refused_with_the_owners_pid_and_nothing_is_lost(tmp_path):
    N = 40
    out = tmp_path / "b"
    jsonl = out / "cycles.jsonl"
    first = _start_batch(out, N)
    try:
        _wait_records(jsonl, 1, first)
        # the four at once, while the first one still runs (N cycles take it tens of seconds)
        others = [subprocess.Popen([SUREPICK_BIN, *verb, "--out", str(out)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
                  for verb in (["sim", "batch", "--scenario", "nominal", "--count", str(N), "--jobs", "1", "--resume"],
                               ["sim", "batch", "--scenario", "nominal", "--count", str(N), "--jobs", "1", "--force"],
                               ["sim", "run", "--scenario", "nominal", "--force"],
                               ["sim", "sweep", "--scenario", "nominal", "--axis", "offset_mm=0,1", "--seeds", "1",
                                "--force"])]
        for p in others:
            stdout, stderr = p.communicate(timeout=120)
            assert p.returncode == 2, (p.args, stdout, stderr)
            assert "is being written by pid %d" % first.pid in stderr, stderr
            assert "cycle " not in stdout                         # refused before any work
        assert first.poll() is None, "the first batch ended before the others were tried: make it longer"
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    done = _records(jsonl)
    assert _lines(jsonl)[-1] == b"" and len(done) >= 1           # whole lines only
    assert len({r["seed"] for r in done}) == len(done)           # one record per seed
    r = surepick("sim", "batch", "--scenario", "nominal", "--count", N, "--jobs", "1", "--out", out, "--resume",
                 timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "took it over" not in r.stderr                        # the first one ended cleanly
    recs = _records(jsonl)
    assert sorted(x["seed"] for x in recs) == list(range(N))
    assert recs[:len(done)] == done                              # what had finished was kept as it was
    assert json.loads((out / "summary.json").read_text())["count"] == N


def test_a_writer_killed_mid_line_is_taken_over_and_resumed(tmp_path):
    out = tmp_path / "b"
    jsonl = out / "cycles.jsonl"
    first = _start_batch(out, 8)
    _wait_records(jsonl, 2, first)
    os.killpg(first.pid, signal.SIGKILL)                         # no clean-up at all
    first.communicate(timeout=60)
    done = _records(jsonl)
    with open(jsonl, "ab") as f:                                 # what a crash mid-write leaves
        f.write(json.dumps(dict(done[0], seed=99))[:40].encode())
    r = surepick("sim", "batch", "--scenario", "nominal", "--count", "8", "--jobs", "1", "--out", out, "--resume",
                 timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "took it over from pid %d" % first.pid in r.stderr and "no longer running" in r.stderr, r.stderr
    recs = _records(jsonl)
    assert recs[:len(done)] == done and sorted(x["seed"] for x in recs) == list(range(8))


def test_sim_run_resumes_over_a_torn_last_line(tmp_path):
    out = tmp_path / "r"
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "4", "--cycles", "1", "--out", out, "--no-plots",
                 timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    first = (out / "cycles.jsonl").read_bytes()
    with open(out / "cycles.jsonl", "ab") as f:
        f.write(b'{"cycle": 1, "fsm_outc')                   # a crash while cycle 1 was written
    with open(out / "ticks.csv", "ab") as f:
        f.write(b"1,40,1")
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "4", "--cycles", "2", "--out", out, "--no-plots",
                 "--resume", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cycles 0..0 finished, running 1..1" in r.stdout
    from surepick.host.records import runrecord
    rec = runrecord.load(str(out))
    assert [c["cycle"] for c in rec.cycles] == [0, 1]
    assert (out / "cycles.jsonl").read_bytes().startswith(first)
