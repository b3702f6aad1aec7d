# The `surepick` command's exit codes. The numbers are defined once, in host/user_error.py
# (beside the error classes that carry them, below every host module); the verbs read them here.
from surepick.host.user_error import FAILED, INTERRUPTED, OK, USAGE  # noqa: F401
