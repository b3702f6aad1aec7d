# tools/slow_machine.py as docs/testing.md writes it: options after the mode, the command after
# "--". The command itself looks in /proc for its busy siblings (children of the same parent
# running the hog's loop), so the count is the kernel's, not the tool's own word.
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

TOOL = str(REPO / "tools" / "slow_machine.py")

# run as the command: how many of its parent's other children spin the hog's loop, and its exit
COUNT_HOGS = r'''
import os, sys
parent = os.getppid()
n = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        with open("/proc/%s/stat" % pid) as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            cmdline = f.read()
    except OSError:
        continue
    if ppid == parent and b"while os.getppid() == parent" in cmdline:
        n += 1
print("hogs", n)
sys.exit(int(sys.argv[1]))
'''


def test_hog_takes_procs_before_the_command_and_passes_its_exit_status():
    r = subprocess.run([sys.executable, TOOL, "hog", "--procs", "1", "--", sys.executable, "-c", COUNT_HOGS, "3"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert "hogs 1" in r.stdout, (r.stdout, r.stderr)


def test_hog_alone_for_some_seconds():
    r = subprocess.run([sys.executable, TOOL, "hog", "--procs", "1", "--seconds", "0.2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "1 busy processes" in r.stderr, r.stderr


def test_hog_without_a_command_or_seconds_is_refused():
    r = subprocess.run([sys.executable, TOOL, "hog", "--procs", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "hog needs a command" in r.stderr, r.stderr


def test_a_killed_slow_machine_leaves_no_hog_behind():
    # SIGKILL gives the tool no chance to stop its hogs: each ends by itself once its parent is gone.
    p = subprocess.Popen([sys.executable, TOOL, "hog", "--procs", "2", "--", "sh", "-c", "echo $$; exec sleep 30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    command = int(p.stdout.readline())
    try:
        line = p.stderr.readline()
        assert "busy processes, pids" in line, line
        pids = [int(x) for x in line.split("pids", 1)[1].split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids), line
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        end = time.monotonic() + 60
        while any(_alive(pid) for pid in pids):
            assert time.monotonic() < end, "hogs %s still spin a minute after their tool was killed" % pids
            time.sleep(0.1)
    finally:
        # its command, orphaned too, is this test's to end (it outlived the suite in a half run)
        try:
            os.kill(command, signal.SIGKILL)
        except OSError:
            pass


def _alive(pid):
    # a zombie (ended, not yet reaped by init) counts as ended
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# run as the command: the CPU quota of the cgroup it runs in, in µs per 100 ms period
OWN_QUOTA = r'''
for line in open("/proc/self/cgroup"):
    hid, ctrls, path = line.strip().split(":", 2)
    if "cpu" in ctrls.split(","):                       # cgroup v1
        print("quota", open("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_quota_us").read().strip())
        break
    if hid == "0" and ctrls == "":                      # cgroup v2
        print("quota", open("/sys/fs/cgroup" + path + "/cpu.max").read().split()[0])
        break
'''


def test_half_with_cores_gives_that_quota():
    r = subprocess.run([sys.executable, TOOL, "half", "--cores", "0.3", "--", sys.executable, "-c", OWN_QUOTA],
                       capture_output=True, text=True, timeout=120)
    if "no writable cgroup" in r.stderr:
        assert r.returncode == 2
        pytest.skip("no writable cgroup on this machine: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert "quota 30000" in r.stdout, (r.stdout, r.stderr)


def test_cores_must_be_above_zero():
    r = subprocess.run([sys.executable, TOOL, "half", "--cores", "0", "--", "true"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "--cores must be above 0" in r.stderr, r.stderr


def test_half_names_what_outlived_its_command():
    # A process the command left behind keeps the quota's group: the tool gives up on it after a
    # few seconds and names it, so the run's log says what a suite left running.
    r = subprocess.run([sys.executable, TOOL, "half", "--cores", "0.5", "--",
                        "sh", "-c", "sleep 17.25 >/dev/null 2>&1 &"], capture_output=True, text=True, timeout=120)
    if "no writable cgroup" in r.stderr:
        pytest.skip("no writable cgroup on this machine: " + r.stderr.strip())
    left = re.search(r"could not remove (\S+): still in it: (\d+) sleep 17\.25", r.stderr)
    try:
        assert r.returncode == 0, r.stderr
        assert left is not None, r.stderr
    finally:
        if left is not None:           # the sleeper and its group are this test's to clear
            os.kill(int(left.group(2)), signal.SIGKILL)
            for _ in range(100):
                try:
                    os.rmdir(left.group(1))
                    break
                except OSError:
                    time.sleep(0.05)
