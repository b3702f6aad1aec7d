# tools/slow_machine.py as docs/testing.md writes it: options after the mode, the command after
# "--". The command itself looks in /proc for its busy siblings (children of the same parent
# running the hog's loop), so the count is the kernel's, not the tool's own word.
import subprocess
import sys

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
    if ppid == parent and b"while True: pass" in cmdline:
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
