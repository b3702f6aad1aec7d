# The `surepick` command's exit codes, defined once for every verb.
OK = 0             # done; the run, comparison or job said yes
FAILED = 1         # the run, comparison or job said no, or the board / link failed
USAGE = 2          # bad input: arguments, files, names the command cannot use
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)
