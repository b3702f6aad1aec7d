# The one error a deploy raises.


class DeployError(Exception):
    """A deploy failure with a message meant for the user."""
