# The local backend of a sweep: worker processes on this machine, each handed one task at a time
# over its own pipe, so the parent always knows which task a worker holds. A worker that dies
# (killed, out of memory, a crash in MuJoCo) costs only the task it held: the task goes back to
# the front of the queue and a new worker takes the dead one's place. A task that has killed
# MAX_LOSSES workers stops the run (fail closed: something in it kills processes).
# Each worker runs within host/worker_limits.py's bounds (memory, file size, CPU per task):
# a task past one stops the run with one line naming it (WorkerBound); results finished before
# it are kept, as for any failure.
import multiprocessing
import signal
import traceback
from collections import deque
from multiprocessing.connection import wait

from surepick.host import worker_limits
from surepick.host.user_error import Failure

MAX_LOSSES = 3


class WorkerError(Failure, RuntimeError):
    """A task raised in a worker, or kept killing workers: the task and the worker's traceback."""


class WorkerBound(WorkerError):
    """A task went past its worker's bounds (worker_limits): one line, no traceback."""


def _serve(conn, fn):
    # A worker: tasks in, results out, until the parent says stop or goes away.
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's to handle
    worker_limits.bound_this_process()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task_id, payload = msg
        try:
            out = ("done", task_id, worker_limits.bounded_task(fn, payload))
        except worker_limits.BoundExceeded as e:
            out = ("bound", task_id, str(e))
        except Exception:
            out = ("error", task_id, traceback.format_exc())
        conn.send(out)


class _Worker:
    def __init__(self, ctx, fn):
        self.fn = fn
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.task = None           # (task id, payload) while it holds one

    def stop(self):
        # An idle worker is told to stop; one still working (the run was interrupted or
        # failed) is killed: its task's result is not wanted any more.
        if self.task is None:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
            self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class LocalPool:
    name = "local"

    def __init__(self, workers=2):
        if workers < 1:
            raise ValueError("--jobs must be at least 1")
        self.workers = workers
        self.lost = 0              # workers that died holding a task (and were replaced)
        self.sent = 0              # tasks handed to workers (a lost task is handed out again)
        self._pool = []
        # fork: a worker starts in milliseconds with everything imported; elsewhere, spawn
        methods = multiprocessing.get_all_start_methods()
        self._ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")

    def describe(self):
        return {"backend": self.name, "workers": self.workers, "workers_lost": self.lost}

    def busy_pids(self):
        """Process ids of the workers holding a task right now."""
        return [w.proc.pid for w in self._pool if w.task]

    def run(self, fn, tasks, on_done):
        """fn(payload) in the workers for each (task id, payload); on_done(task id, result) here,
        as each finishes. Returns when every task is done; raises WorkerError, or whatever
        on_done raises, after stopping the workers."""
        queue = deque(tasks)
        losses = {}
        pool = self._pool = [_Worker(self._ctx, fn) for _ in range(min(self.workers, len(queue)))]
        try:
            while queue or any(w.task for w in pool):
                for i, w in enumerate(pool):
                    if w.task is None and queue:
                        w.task = queue.popleft()
                        self.sent += 1
                        try:
                            w.conn.send(w.task)
                        except OSError:          # it died idle: nothing of the task was done
                            self.sent -= 1
                            queue.appendleft(w.task)
                            w.task = None
                            pool[i] = self._renew(w)
                busy = [w for w in pool if w.task]
                wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
                for i, w in enumerate(pool):
                    if w.task is None:
                        continue
                    msg = self._receive(w)
                    if msg == "dead":
                        pool[i] = self._replace(w, queue, losses)
                    elif msg is not None:
                        kind, task_id, out = msg
                        if kind == "bound":
                            raise WorkerBound("task %r stopped: %s" % (task_id, out))
                        if kind == "error":
                            raise WorkerError("task %r failed in a worker:\n%s" % (task_id, out))
                        w.task = None
                        on_done(task_id, out)
        finally:
            for w in pool:
                w.stop()

    def _receive(self, w):
        # -> the worker's message, None when there is none yet, "dead" when there never will be.
        try:
            if w.conn.poll():
                return w.conn.recv()
        except (EOFError, OSError):
            w.proc.join(10)
            return "dead"
        if not w.proc.is_alive() and not w.conn.poll():
            return "dead"
        return None

    def _renew(self, w):
        w.conn.close()
        w.proc.join(10)
        return _Worker(self._ctx, w.fn)

    def _replace(self, w, queue, losses):
        # The worker died holding a task: the task goes first in line, a new worker takes its place.
        task_id = w.task[0]
        losses[task_id] = losses.get(task_id, 0) + 1
        self.lost += 1
        if losses[task_id] >= MAX_LOSSES:
            raise WorkerError("task %r killed %d workers (last exit code %s)" % (task_id, losses[task_id],
                                                                                 w.proc.exitcode))
        queue.appendleft(w.task)
        w.task = None
        return self._renew(w)
