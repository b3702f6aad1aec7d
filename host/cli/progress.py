# Progress for work a person waits on. On a terminal (stdout and stderr both ttys): a bar for
# counted work (Progress) or one status line redrawn in place (Status), on stderr so stdout stays
# the result. Anywhere else (CI logs, pipes, tests) nothing at all: the verb prints its final
# summary as usual. SUREPICK_PROGRESS=1 forces it on, =0 off.
import os
import sys
import time


def interactive():
    forced = os.environ.get("SUREPICK_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """A bar over `total` items. tally(item) -> names of counters to raise for a finished item
    (e.g. ("placed",)); every counter named in `counters` is shown beside the bar."""

    def __init__(self, total, what="cycles", counters=(), tally=None, done=0):
        self.total = total
        self.what = what
        self.counts = {c: 0 for c in counters}
        self.tally = tally
        self.bar = None
        if interactive():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            self.bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                    TextColumn("left"), TimeRemainingColumn(),
                                    console=Console(file=sys.stderr), transient=False)
            self.bar.start()
            self.task = self.bar.add_task(what, total=total, completed=done, counts=self._counts_text())

    def _counts_text(self):
        return "  ".join("%s %d" % kv for kv in self.counts.items())

    def update(self, done, total=None, item=None):
        # Same signature as engines/batch.run_batch's progress callback: (done, total, record).
        if item is not None and self.tally is not None:
            for c in self.tally(item):
                self.counts[c] = self.counts.get(c, 0) + 1
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total or self.total, counts=self._counts_text())

    def close(self):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Status:
    """One line of what is happening now (`fit: gripper, evaluation 12, best cost 3.1`), redrawn
    at most `hz` times a second on a terminal; nothing elsewhere."""

    def __init__(self, prefix, hz=8.0):
        self.prefix = prefix
        self.on = interactive()
        self.min_dt = 1.0 / hz
        self.last = 0.0
        self.shown = False
        self.t0 = time.monotonic()

    def update(self, text, force=False):
        if not self.on:
            return
        now = time.monotonic()
        if not force and now - self.last < self.min_dt:
            return
        self.last = now
        line = "%s: %s  [%.0f s]" % (self.prefix, text, now - self.t0)
        sys.stderr.write("\r\x1b[K" + line)
        sys.stderr.flush()
        self.shown = True

    def note(self, text):
        # A line that stays (a finished step), above the status line.
        if not self.on:
            return
        sys.stderr.write("\r\x1b[K%s: %s\n" % (self.prefix, text))
        sys.stderr.flush()
        self.shown = False
        self.last = 0.0

    def close(self):
        if self.on and self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        self.shown = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
