# Link failures, each with a message meant for the user (the CLI prints them as they are).

from surepick.host.user_error import Failure


class LinkError(Failure):
    """A link failure with a message meant for the user."""


class NoBoard(LinkError):
    """Nothing to talk to on that port (no device, nothing listening, no Pico found)."""


class PortBusy(LinkError):
    """Another program has the port open."""


class Disconnected(LinkError):
    """The port went away while in use (cable pulled, board reset, virtual board killed)."""


class RequestTimeout(LinkError):
    """No REPLY to a request in time (firmware not running, or busy in the REPL)."""


class ConsoleLent(LinkError):
    """The board's console is lent to a raw client (mpremote, deploy) through the link hub."""
