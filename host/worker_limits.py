# The resource bounds of every process that runs input a user handed in (job, plant, config and
# arm files, sweep plans; firmware and files on a virtual board's flash), set here and nowhere
# else: sweep workers (engines/sweep_pool.py), batch workers (engines/batch.py), the virtual
# board's micropython (vboard/interp.py) and the emulated RP2040's node (engines/rp2040/chip.py).
# The validators bound each input first (docs/safety-hostile-input.md); these are the backstop
# for whatever they let through that still grows: the task stops with a clear error, the machine
# and the results finished before it stay.
#
# Linux only (resource.prlimit, RLIMIT_DATA counting private writable mappings); elsewhere the
# calls do nothing. A process's own bounds are lowered, never raised.
import errno
import os
import signal

from surepick.host.user_error import Failure

try:
    import resource
except ImportError:                      # not a POSIX system: no bounds to set
    resource = None

MEMORY_BYTES = 1 << 30   # data a worker may hold (RLIMIT_DATA: heap and private mappings), 1 GiB
FILE_BYTES = 1 << 30     # the largest file a worker may write (RLIMIT_FSIZE), 1 GiB
TASK_CPU_S = 900         # CPU seconds one task (a batch cycle, a sweep cell's cycles) may use



def _what(name):
    # a bound as the messages say it (read when said: tests lower the bounds)
    if name == "memory":
        return "%d MiB of memory" % (MEMORY_BYTES >> 20)
    if name == "file":
        return "files of %d MiB" % (FILE_BYTES >> 20)
    return "%d s of CPU time" % TASK_CPU_S


class BoundExceeded(Failure):
    """A task went past a bound of the process running it: one line saying which."""


def _lower(which, limit):
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(which, (limit, limit))


def bound_this_process():
    # In a worker, before it takes a task: memory and file size for its whole life; a write
    # past the file bound fails with EFBIG (SIGXFSZ ignored, as CPython does) instead of killing
    # the worker; the CPU bound is per task (bounded_task).
    if resource is None:
        return
    _lower(resource.RLIMIT_DATA, MEMORY_BYTES)
    _lower(resource.RLIMIT_FSIZE, FILE_BYTES)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, _cpu_spent)


def bound_child(pid):
    # A process started with subprocess (micropython, node), bounded from outside as soon as it
    # runs: memory and file size (a board runs as long as its user wants: no CPU bound).
    if resource is None or not hasattr(resource, "prlimit"):
        return
    for which, limit in ((resource.RLIMIT_DATA, MEMORY_BYTES), (resource.RLIMIT_FSIZE, FILE_BYTES)):
        try:
            soft, hard = resource.prlimit(pid, which)
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.prlimit(pid, which, (limit, limit))
        except (ProcessLookupError, PermissionError):
            return                   # gone already (its exit is its caller's to see)


def _cpu_spent(signum, frame):
    raise BoundExceeded("it went past its bound of " + _what("cpu"))


def _cpu_used():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bounded_task(fn, payload):
    # fn(payload) within TASK_CPU_S of CPU from now (RLIMIT_CPU's soft limit moved on per task:
    # SIGXCPU then raises in the task), its memory and file bounds turned into BoundExceeded.
    if resource is None:
        return fn(payload)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = int(_cpu_used()) + 1 + TASK_CPU_S
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        return fn(payload)
    except MemoryError:
        raise BoundExceeded("it went past its bound of " + _what("memory")) from None
    except OSError as e:
        if e.errno != errno.EFBIG:
            raise
        where = " (%s)" % e.filename if e.filename else ""
        raise BoundExceeded("it went past its bound of %s%s" % (_what("file"), where)) from None
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def limits_of(pid=None):
    # -> {"memory": bytes, "file": bytes, "cpu": seconds} of a process (None: this one), soft
    # limits as the kernel applies them (RLIM_INFINITY: none). For tests and `doctor`-style checks.
    if resource is None:
        return {}
    pid = os.getpid() if pid is None else pid
    out = {}
    for name, which in (("memory", resource.RLIMIT_DATA), ("file", resource.RLIMIT_FSIZE), ("cpu", resource.RLIMIT_CPU)):
        out[name] = resource.prlimit(pid, which)[0]
    return out
