# A verb's own error: CommandError, a message for the user and the exit code the verb chooses.
# It is one of the errors meant for the user (host/user_error.py), as every domain error is
# (LinkError, DescriptionError, ...): `main` catches them all in one place and prints
# `surepick <verb>: <message>` on stderr, exiting with the error's code. Raise CommandError where
# the verb knows more than the error it caught (which file, which flag, what was kept).
from surepick.host.user_error import USAGE, UserError


class CommandError(UserError):
    """A verb's failure: the message for the user, `exit_code` for the shell (default: bad input)."""

    def __init__(self, message, exit_code=USAGE):
        super().__init__(message)
        self.exit_code = exit_code


def cannot(doing, path, e, exit_code=USAGE):
    """The CommandError for an OSError `e` met while `doing` ("write", "use --out") `path`: every
    verb says it the same way, `cannot write PATH: Permission denied`."""
    return CommandError("cannot %s %s: %s" % (doing, path, e.strerror or e), exit_code)
