# The one error a deploy raises.

from surepick.host.user_error import Failure


class DeployError(Failure):
    """A deploy failure with a message meant for the user."""
