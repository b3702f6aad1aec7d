"""Run a command on a machine made busy or slow, to show a test does not depend on speed or load.

    python tools/slow_machine.py hog [--procs N] -- CMD ...
        CMD beside N busy-looping processes (default: one per core), stopped when CMD ends.
    python tools/slow_machine.py half [--cores F] -- CMD ...
        CMD (and every process it starts) with half the machine's CPU time: a cgroup with a CPU
        quota of cores/2 (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us); when no cgroup is writable
        here, CMD pinned to half the cores (taskset) beside a hog on those cores. --cores F: a
        quota of F cores instead (0.3: 30 % of one core; cgroup only).
    python tools/slow_machine.py hog --procs 2 --seconds 60
        only the hog (another terminal runs what it slows).

Exit status: CMD's. Every process it starts is stopped by its own pid, the cgroup removed; a hog
also ends by itself when the tool is killed.
"""
import argparse
import os
import subprocess
import sys
import time

V2_ROOT = "/sys/fs/cgroup"
V1_CPU = "/sys/fs/cgroup/cpu"
PERIOD_US = 100000


# A hog's loop: it spins until its parent is gone, so a slow_machine that is killed (SIGKILL,
# or SIGTERM before its `finally`) does not leave busy processes behind for the next run.
HOG_LOOP = """import os, sys
parent = int(sys.argv[1])        # the tool's pid, given: it may be gone before this line runs
while os.getppid() == parent:
    for _ in range(200000):
        pass
"""


def start_hog(procs, cpus=None):
    # -> [Popen]: `procs` Python processes each spinning one core (optionally pinned to `cpus`).
    out = []
    for _ in range(procs):
        p = subprocess.Popen([sys.executable, "-c", HOG_LOOP, str(os.getpid())])
        if cpus is not None:
            os.sched_setaffinity(p.pid, cpus)
        out.append(p)
    return out


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def make_cgroup(cores):
    # -> (directory, how it was limited) of a new cgroup allowed `cores` CPUs, or None.
    name = "surepick-half-%d" % os.getpid()
    quota = int(cores * PERIOD_US)
    candidates = []
    if os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
        candidates.append((os.path.join(V2_ROOT, name), "cpu.max", "%d %d" % (quota, PERIOD_US)))
    if os.path.isdir(V1_CPU):
        candidates.append((os.path.join(V1_CPU, name), "cpu.cfs_quota_us", str(quota)))
    for d, knob, value in candidates:
        try:
            os.mkdir(d)
        except OSError:
            continue
        try:
            with open(os.path.join(d, knob), "w") as f:
                f.write(value)
            with open(os.path.join(d, knob)) as f:
                if f.read().split()[0] != value.split()[0]:
                    raise OSError("the quota did not hold")
            return d, "%s %s = %s" % (d, knob, value)
        except OSError:
            os.rmdir(d)
    return None


def run_half(cmd, quota_cores=None):
    cores = os.cpu_count() or 1
    cg = make_cgroup(quota_cores or cores / 2.0)
    if cg is None and quota_cores:
        print("slow_machine: no writable cgroup here for a quota of %s cores" % quota_cores, file=sys.stderr)
        return 2
    if cg is not None:
        d, how = cg
        print("slow_machine: %s by cgroup quota (%s)" % ("%s cores" % quota_cores if quota_cores else "half speed", how),
              file=sys.stderr, flush=True)

        def enter():
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        try:
            return subprocess.call(cmd, preexec_fn=enter)
        finally:
            _say_throttled(d)
            _remove_cgroup(d)
    half = set(sorted(os.sched_getaffinity(0))[:max(1, cores // 2)])
    print("slow_machine: no writable cgroup; half speed by taskset to cpus %s beside a hog on them"
          % sorted(half), file=sys.stderr, flush=True)
    hog = start_hog(len(half), half)
    try:
        return subprocess.call(["taskset", "-c", ",".join(map(str, sorted(half)))] + cmd)
    finally:
        stop(hog)


def _say_throttled(d):
    # The proof the quota bit: how often the kernel held the group back (cpu.stat).
    try:
        with open(os.path.join(d, "cpu.stat")) as f:
            stat = dict(line.split() for line in f if line.strip())
    except OSError:
        return
    print("slow_machine: throttled %s of %s periods" % (stat.get("nr_throttled"), stat.get("nr_periods")),
          file=sys.stderr, flush=True)


def _remove_cgroup(d):
    # Its processes have ended (the command returned); a straggler keeps it: wait, then give up.
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.1)
    print("slow_machine: could not remove %s: still in it: %s" % (d, "; ".join(_stragglers(d)) or "?"),
          file=sys.stderr)


def _stragglers(d):
    # -> "PID command line" of each process left in the group: what outlived the command.
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            pids = f.read().split()
    except OSError:
        return []
    out = []
    for pid in pids:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                out.append("%s %s" % (pid, f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]))
        except OSError:
            out.append(pid)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("hog", "half"))
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1, help="hog processes (default: one per core)")
    ap.add_argument("--seconds", type=float, help="hog only: this long, then stop")
    ap.add_argument("--cores", type=float, help="half only: a CPU quota of this many cores (default: half of them)")
    # The command is everything after "--", split off by hand: argparse's REMAINDER after the
    # mode took "--procs 2 ..." as the command ("No such file or directory: '--procs'").
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.mode == "half":
        if not cmd:
            ap.error("half needs a command: half -- CMD ...")
        if args.cores is not None and args.cores <= 0:
            ap.error("--cores must be above 0")
        return run_half(cmd, args.cores)
    if not cmd and args.seconds is None:
        ap.error("hog needs a command (hog -- CMD ...) or --seconds")
    hog = start_hog(args.procs)
    print("slow_machine: %d busy processes, pids %s" % (len(hog), " ".join(str(p.pid) for p in hog)),
          file=sys.stderr, flush=True)
    try:
        if cmd:
            return subprocess.call(cmd)
        time.sleep(args.seconds)
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        stop(hog)


if __name__ == "__main__":
    sys.exit(main())
