# One error type for every verb: a message for the user and the exit code. `main` prints it
# once, as `surepick <verb>: <message>` on stderr, and exits with the code.
#
# Domain errors (raised below the CLI, with messages meant for the user) become a
# CommandError in one place, here: DOMAIN_ERRORS names each class and its exit code. The
# classes are looked up in sys.modules, so no verb's module is imported to map another's error.
import sys

from surepick.host.cli import exitcodes


class CommandError(Exception):
    """A verb's failure: `message` for the user, `exit_code` for the shell."""

    def __init__(self, message, exit_code=exitcodes.USAGE):
        super().__init__(message)
        self.message = str(message)
        self.exit_code = exit_code


# (module, class, exit code). Subclasses map with their base (NoBoard, PortBusy, HilError are
# LinkErrors). Bad input is USAGE; a board, link or run that fails is FAILED.
DOMAIN_ERRORS = (
    ("surepick.host.link.errors", "LinkError", exitcodes.FAILED),
    ("surepick.host.deploy.errors", "DeployError", exitcodes.FAILED),
    ("surepick.host.monitor.store", "StoreError", exitcodes.USAGE),
    ("surepick.host.records.runrecord", "RunRecordError", exitcodes.USAGE),
    ("surepick.host.records.compare", "CompareError", exitcodes.USAGE),
    ("surepick.host.records.fit", "FitError", exitcodes.USAGE),
    ("surepick.host.records.board_recording", "RecordingError", exitcodes.USAGE),
    ("surepick.host.vboard.interp", "MicropythonNotFound", exitcodes.USAGE),
    ("surepick.host.engines.vboard", "VboardRunError", exitcodes.FAILED),
    ("surepick.host.engines.batch", "ResumeError", exitcodes.USAGE),
    ("surepick.host.worker_limits", "BoundExceeded", exitcodes.FAILED),
)


def as_command_error(exc):
    # -> the CommandError for `exc`, or None when it is not an error meant for the user (a
    # bug: let its traceback show).
    if isinstance(exc, CommandError):
        return exc
    for modname, clsname, code in DOMAIN_ERRORS:
        cls = getattr(sys.modules.get(modname), clsname, None)
        if cls is not None and isinstance(exc, cls):
            return CommandError(str(exc), code)
    return None
