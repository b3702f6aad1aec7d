# Many tools on one board, through the real CLI against the real firmware on the virtual board:
# the monitor stays open while `job start --wait` waits and `job abort` comes from a third
# process; mpremote gets the console through the hub while the monitor is attached, and a
# deploy through the hub brings the firmware back.
import re
import subprocess
import sys

import pytest

from tests.support.bench import Bench, text_of, wait_for_text
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON


@pytest.fixture
def bench(tmp_path, request):
    # At the arm's true pace, so a job's length does not depend on the host's speed.
    b = Bench(tmp_path, scenario=getattr(request, "param", "part_missing"), realtime=True)
    b.wait_firmware()
    yield b
    b.close()


def test_monitor_job_wait_and_abort_from_a_third_process_at_once(bench):
    p = bench.port
    mon = bench.start("monitor", "--port", p, "--db", bench.tmp / "m.db", "--plain", "--seconds", "90")
    wait_for_text(mon.err, "through the link hub", 30, mon)
    # No part and 9 attempts: the cycle runs for a long while, so the abort finds it running.
    job = bench.start("job", "start", "--port", p, "--wait", "--attempts", "9", "--timeout", "80")
    wait_for_text(job.out, "IDLE>APPROACH", 30, job)
    st = bench.run("job", "status", "--port", p)              # a fourth client meanwhile
    assert st.returncode == 0 and not st.stdout.startswith("state IDLE"), st.stdout + st.stderr
    ab = bench.run("job", "abort", "--port", p)
    assert ab.returncode == 0 and ab.stdout.strip() == "abort: ok", ab.stdout + ab.stderr
    assert job.wait(60) == 1
    out = text_of(job.out)
    assert "job accepted" in out and "cycle ended: fault ABORTED" in out, out
    # The monitor saw the whole cycle live and stored it: the ABORTED fault record is in.
    wait_for_text(mon.out, re.compile(r"record board=\S+ seq=\d+ type=fault .*reason=ABORTED"), 30, mon)
    assert mon.poll() is None                                  # still attached
    ls = bench.run("link", "status", "--port", p)
    assert ls.returncode == 0 and "client surepick monitor" in ls.stdout, ls.stdout
    assert "refused" in ls.stdout and " 0 refused" in ls.stdout
    cl = bench.run("job", "clear", "--port", p)
    assert cl.returncode == 0, cl.stderr
    mon.terminate()
    mon.wait(15)


@pytest.mark.slow
def test_mpremote_through_the_hub_while_the_monitor_is_attached(bench):
    p = bench.port
    mon = bench.start("monitor", "--port", p, "--db", bench.tmp / "m.db", "--plain", "--seconds", "120")
    wait_for_text(mon.err, "through the link hub", 30, mon)
    wait_for_text(mon.out, " record board=", 30, mon)
    r = bench.run("link", "mpremote", "--port", p, "--", "exec", "print(6*7)", timeout=60)
    assert r.returncode == 0 and r.stdout.strip().endswith("42"), r.stdout + r.stderr
    err = wait_for_text(mon.err, "the board's console is back from", 20, mon)
    assert re.search(r"console is lent to pid \d+ \(.*mpremote", err), err
    assert "Traceback" not in r.stderr
    # Any serial tool can use the raw console the hub prints, e.g. mpremote itself.
    ls = bench.run("link", "status", "--port", p)
    raw = re.search(r"raw console (/dev/pts/\d+)", ls.stdout).group(1)
    m = subprocess.run([sys.executable, "-m", "mpremote", "connect", raw, "exec", "print(7*6)"],
                       capture_output=True, text=True, timeout=60, env=bench.env)
    assert m.returncode == 0 and m.stdout.strip() == "42", m.stdout + m.stderr
    # mpremote left the firmware stopped at the REPL; a deploy through the hub restarts it and
    # the monitor, attached all along, hears its hello.
    before = text_of(mon.out).count(" hello board=")
    d = bench.run("deploy", "--port", p, "--quiet", timeout=120)
    assert d.returncode == 0, d.stdout + d.stderr
    wait_for_text(mon.out, re.compile(r"( hello board=.*){%d}" % (before + 1), re.S), 30, mon)
    st = bench.run("job", "status", "--port", p)
    assert st.returncode == 0 and st.stdout.startswith("state IDLE"), st.stdout + st.stderr
    assert mon.poll() is None
    mon.terminate()
    mon.wait(15)
