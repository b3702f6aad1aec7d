# The pose-source interface. A source yields Samples (surepick.host.teleop.sample) at its own rate:
# iterating blocks until the next reading, as a device read does; a recorded file yields its
# samples in order and says `realtime = False`, so a runner may replay it faster than life.
#
#   name          what the logs call it
#   rate_hz       nominal sample rate (a reader thread polls at this rate)
#   scale_hint    hand-to-arm scale the source's poses are meant for: None = the pipeline
#                 default (a hand in a VR tracking space); 1.0 for sources that already speak
#                 arm metres (keyboard and SpaceMouse jog)
#   realtime      True for live devices: samples arrive when they happen
#   close()       release the device (idempotent)

from surepick.host.user_error import BadInput


class SourceError(BadInput, RuntimeError):
    pass


class MissingExtra(SourceError):
    # A driver package or device is missing: one line naming what to install.
    def __init__(self, what, extra, detail=""):
        msg = "%s is not available%s: pip install surepick[%s]" % (what, (" (%s)" % detail) if detail else "", extra)
        super().__init__(msg)
        self.extra = extra


class PoseSource:
    name = "source"
    rate_hz = 90.0
    scale_hint = None
    realtime = True

    def __iter__(self):
        raise NotImplementedError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
