# Progress for work a person waits on: a rich bar on a terminal, a plain line every tenth of
# the way otherwise (CI logs stay short). Both on stderr, so stdout stays the result.
import sys


class Progress:
    def __init__(self, total, what="cycles"):
        self.total = total
        self.what = what
        self.bar = None
        self.last_tenth = -1
        if sys.stderr.isatty():
            from rich.progress import Progress as RichProgress
            self.bar = RichProgress(transient=False)
            self.bar.start()
            self.task = self.bar.add_task(what, total=total)

    def update(self, done, total=None, item=None):
        # Same signature as engines/batch.run_batch's progress callback: (done, total, record).
        total = total or self.total
        if self.bar is not None:
            self.bar.update(self.task, completed=done)
            return
        tenth = done * 10 // total
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            print("  %d/%d %s done" % (done, total, self.what), file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
