# Power cuts of firmware/flashlog.py under the real `micropython` (tests/mpy/flashlog_cuts.py):
#  - torn writes: each boot (checks the log the last one left), then logs through a
#    filesystem that loses power after a random number of bytes/file operations, including
#    in the middle of a rotation; the next boot is the fresh boot that checks it (a chain of
#    boots runs in one process, each reading the log afresh from its files; a fresh process
#    checks the chain's last cut);
#  - real kills: a process logs flat out and gets SIGKILLed after a drawn number of commits.
# After every cut the fresh boot must find every committed record present and intact, the
# sequence contiguous, counters not gone back, torn tails detected and counted.
import random
import select
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import mpy as host_helpers  # noqa: E402

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def torn_chain(path, seed, cuts):
    # `cuts` boots in a row on one log directory, in one micropython process (the script's
    # `chain` mode: each boot reads the log afresh from its files, as a new process would; a
    # process per boot cost 50 ms of start-up each), then a fresh process checks the last cut;
    # returns what they reported
    rng = random.Random(seed)
    budgets = [rng.choice((rng.randrange(0, 200), rng.randrange(0, 1500), rng.randrange(0, 4000)))
               for _ in range(cuts)]
    proc = host_helpers.run("flashlog_cuts.py", "chain", path, seed * 100003, *budgets, timeout=600)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode() + out[-3000:]
    boots = out.split("BOOT ")[1:]
    assert len(boots) == cuts, (len(boots), out[-3000:])
    wheres = {}
    torn = 0
    for i, (text, budget) in enumerate(zip(boots, budgets)):
        lines = text.splitlines()
        assert lines[0] == str(i), (i, text)
        assert lines[1].startswith("CHECK ok"), (i, budget, text)
        torn += int(lines[1].split("torn=")[1].split()[0]) > 0
        assert lines[-1].startswith("CUT "), (i, budget, text)
        where = lines[-1].split()[1]
        wheres[where] = wheres.get(where, 0) + 1
    final = host_helpers.run("flashlog_cuts.py", "check", path, timeout=60).stdout.decode()
    assert final.startswith("CHECK ok"), final
    return wheres, torn, final.strip()


def run_torn(tmp_path, chains, cuts_per_chain):
    with ThreadPoolExecutor(max_workers=chains) as pool:
        results = list(pool.map(lambda c: torn_chain(str(tmp_path / ("log%d" % c)), 1 + c,
                                                     cuts_per_chain), range(chains)))
    wheres = {}
    torn = 0
    for w, t, _ in results:
        torn += t
        for k, v in w.items():
            wheres[k] = wheres.get(k, 0) + v
    return wheres, torn, [r[2] for r in results]


# Each kill comes after the boot's check and a drawn number of the workload's commits (read as
# they are printed), then a drawn pause of up to a few milliseconds, so it lands anywhere in the
# write that follows: where it lands depends on the draws, not on how fast this machine boots
# micropython or writes (a kill drawn in wall time alone fell before the boot on a busy machine).
MIN_COMMITS_BEFORE_KILL = 21
MAX_COMMITS_BEFORE_KILL = 60
MAX_PAUSE_AFTER_S = 0.02
LINE_WAIT_S = 60          # a hang guard only


def _line(proc, why):
    ready, _, _ = select.select([proc.stdout], [], [], LINE_WAIT_S)
    assert ready, "no line from the logging process within %d s (%s)" % (LINE_WAIT_S, why)
    return proc.stdout.readline().decode(errors="replace")


def kill_chain(path, seed, kills):
    rng = random.Random(seed)
    witness = path + ".witness"
    commits = 0
    for i in range(kills):
        proc = subprocess.Popen(host_helpers.command("flashlog_cuts.py", "kill", path,
                                                     seed * 1009 + i),
                                cwd=str(host_helpers.ROOT), env=host_helpers.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        try:
            first = _line(proc, "the boot's check")
            assert first.startswith("CHECK ok"), (i, first)
            wanted = rng.randint(MIN_COMMITS_BEFORE_KILL, MAX_COMMITS_BEFORE_KILL)
            seen = 0
            while seen < wanted:
                line = _line(proc, "commit %d of %d" % (seen + 1, wanted))
                assert line.startswith("W "), (i, line)
                seen += 1
            time.sleep(rng.uniform(0, MAX_PAUSE_AFTER_S))
        finally:
            proc.send_signal(signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
        assert not err, (i, err[:300])
        lines = rest.decode(errors="replace").split("\n")
        done = [l for l in lines[:-1] if l.startswith("W ")]  # complete lines only
        # the last witnessed commit: the one read above, or a later complete one
        commits += seen + len(done)
        last = done[-1] if done else line
        with open(witness, "w") as f:
            f.write(last.rstrip("\n")[2:] + "\n")
    final = host_helpers.run("flashlog_cuts.py", "check", path, timeout=60).stdout.decode()
    assert final.startswith("CHECK ok"), final
    return commits


def test_flashlog_power_cuts_quick(tmp_path):
    wheres, torn, finals = run_torn(tmp_path, 2, 20)
    assert sum(wheres.values()) == 40
    assert kill_chain(str(tmp_path / "kill"), 5, 3) > 0


@pytest.mark.slow
def test_flashlog_1000_torn_power_cuts(tmp_path):
    t0 = time.monotonic()
    wheres, torn, finals = run_torn(tmp_path, 4, 250)
    took = time.monotonic() - t0
    assert sum(wheres.values()) == 1000
    # the cuts landed everywhere: mid-record, at a record boundary, in every rotation step
    for where in ("write-mid-record", "segment-start-mid-record", "create", "remove"):
        assert wheres.get(where, 0) > 0, wheres
    assert torn > 300  # boots that found (and counted) a torn tail
    print("\n1000 torn cuts in %.1f s: %s; boots that found a torn tail: %d\n%s"
          % (took, wheres, torn, "\n".join(finals)))


@pytest.mark.slow
def test_flashlog_50_sigkills(tmp_path):
    t0 = time.monotonic()
    commits = kill_chain(str(tmp_path / "kill"), 11, 50)
    assert commits > 1000
    print("\n50 SIGKILLs in %.1f s, %d commits witnessed" % (time.monotonic() - t0, commits))
