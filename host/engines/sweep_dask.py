# The Dask backend of a sweep: the same tasks as the local pool (engines/sweep.py's run_chunk),
# submitted to a Dask distributed scheduler: a cluster's (`--scheduler tcp://HOST:8786`; workers
# started by dask-scheduler/dask-worker over SSH, dask-jobqueue on SLURM or PBS, or Kubernetes) or
# a LocalCluster on this machine when no address is given. The scheduler re-runs the task of a
# worker that died elsewhere; a task that kills several workers (Dask's KilledWorker) stops the
# sweep. Dask is an optional extra: without it, one line says how to install it.
import logging
import time

from surepick.host.user_error import BadInput, Failure

DASK_MISSING = ("--backend dask needs Dask's distributed scheduler: pip install 'surepick[dask]' "
                "(dask and distributed, pinned in requirements.lock)")


class DaskUnavailable(BadInput, RuntimeError):
    pass


def _distributed():
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable(DASK_MISSING) from None
    return distributed


def versions():
    d = _distributed()
    import dask
    return {"dask": dask.__version__, "distributed": d.__version__}


class DaskBackend:
    name = "dask"

    def __init__(self, scheduler=None, workers=2, connect_timeout_s=30):
        d = _distributed()
        self.scheduler = scheduler
        self.cluster = None
        if scheduler:
            try:
                self.client = d.Client(scheduler, timeout=connect_timeout_s)
            except (OSError, TimeoutError) as e:
                raise DaskUnavailable("cannot reach the Dask scheduler at %s: %s" % (scheduler, e)) from None
        else:
            # One single-threaded worker process per job, as the local pool; no dashboard. Its logs
            # are silenced: shutting down on a loaded machine logs heartbeat tracebacks that look
            # like failures; the sweep reports a failed or lost task itself (DaskTaskError).
            self.cluster = d.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                          dashboard_address=None, silence_logs=logging.CRITICAL)
            self.client = d.Client(self.cluster)
        self._run_id = "%x" % int(time.time() * 1000)

    @property
    def workers(self):
        return len(self.client.scheduler_info().get("workers", {}))

    def describe(self):
        return {"backend": self.name, "scheduler": self.scheduler or "LocalCluster",
                "workers": self.workers, **versions()}

    def run(self, fn, tasks, on_done):
        d = _distributed()
        from distributed.scheduler import KilledWorker
        futures = {}
        for task_id, payload in tasks:
            f = self.client.submit(fn, payload, key="surepick-%s-%s" % (self._run_id, task_id), pure=False)
            futures[f] = task_id
        try:
            for f in d.as_completed(list(futures)):
                task_id = futures[f]
                if f.status == "error":
                    exc = f.exception()
                    if isinstance(exc, KilledWorker):
                        raise DaskTaskError("task %r killed the Dask workers that ran it: %s" % (task_id, exc))
                    raise DaskTaskError("task %r failed on a Dask worker: %s: %s\n%s" % (
                        task_id, type(exc).__name__, exc, "".join(_traceback(f))))
                out = f.result()
                f.release()
                on_done(task_id, out)
        finally:
            pending = [f for f in futures if f.status == "pending"]
            if pending:
                self.client.cancel(pending)
        self._run_id += "r"     # a later run() gets fresh task keys

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class DaskTaskError(Failure, RuntimeError):
    pass


def _traceback(f):
    import traceback
    tb = f.traceback()
    return traceback.format_tb(tb) if tb is not None else []
