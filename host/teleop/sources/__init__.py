# Pose sources, one interface (base.PoseSource): a recorded stream file (JSONL or CSV), keyboard
# jog in the terminal, an OpenVR controller, a SpaceMouse. open_source() picks one by name.
from surepick.host.teleop.sources.base import MissingExtra, PoseSource, SourceError  # noqa: F401


def open_source(spec, **kw):
    # spec: "openvr", "spacemouse", "keyboard", or a path to a .jsonl / .csv stream file.
    if spec == "openvr":
        from surepick.host.teleop.sources.openvr_source import OpenVRSource
        return OpenVRSource(**kw)
    if spec == "spacemouse":
        from surepick.host.teleop.sources.spacemouse import SpaceMouseSource
        return SpaceMouseSource(**kw)
    if spec == "keyboard":
        from surepick.host.teleop.sources.keyboard import KeyboardSource
        return KeyboardSource(**kw)
    from surepick.host.teleop.sources.stream_file import StreamFileSource
    return StreamFileSource(spec)
