"""Errors meant for the user, and the `surepick` command's exit codes: both defined once, here.

An error whose message a user can act on (a file that is wrong, a board that does not answer)
derives from BadInput or Failure, wherever it is raised; the CLI catches UserError once
(host/cli/main.py) and prints `surepick <verb>: <message>`, exiting with the class's code. Any
other exception is a bug, and its traceback shows. This module sits below every other host
module (tools/import_graph.py), so any of them may import it.
"""

OK = 0             # done; the run, comparison or job said yes
FAILED = 1         # the run, comparison or job said no, or the board / link failed
USAGE = 2          # bad input: arguments, files, names the command cannot use
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)
PIPE_CLOSED = 141  # what reads the output went away (`| head`): 128 + SIGPIPE, as shells report it


class UserError(Exception):
    """A failure the user is told about in one line (its message) and the shell by exit_code."""

    exit_code = FAILED


class BadInput(UserError):
    """The input cannot be used (an argument, a file, a name): exit 2. The message says which
    and, where there is one, the way out."""

    exit_code = USAGE


class Failure(UserError):
    """The input was fine but the board, the link or the run failed: exit 1."""

    exit_code = FAILED
