# Host side of the link: a stream parser for whatever bytes arrive on the board's USB serial
# port. Frames (see shared_fsm/link.py, docs/protocol.md) come out decoded; everything else is
# REPL text and goes to a side channel untouched. Never raises on input; every valid frame
# after any amount of garbage is recovered, because RS (0x1E) always starts a new frame.
from collections import namedtuple

from surepick.shared_fsm import link

Frame = namedtuple("Frame", "ftype fields")

_RS = b"\x1e"
_LF = b"\n"
_TEXT, _FRAME, _DISCARD = 0, 1, 2
_LIMIT = link.MAX_FRAME_LEN + 1  # + a CR before LF


def frame_name(ftype):
    s = link.SCHEMA.get(ftype)
    return s[0] if s else "0x%02X" % ftype


def as_dict(frame):
    # {"type": "EVENT", "seq": ..., ...}; a REPLY's payload becomes a list under "payload".
    name, _, _, names = link.SCHEMA[frame.ftype]
    out = {"type": name}
    for key, value in zip(names, frame.fields):
        if key == "payload":
            out.setdefault("payload", []).append(value)
        else:
            out[key] = value
    if name == "REPLY":
        out.setdefault("payload", [])
    return out


class FrameParser:
    # feed(chunk) -> list of Frame. on_text(bytes) receives REPL text as it arrives (not
    # necessarily whole lines). Requests (host -> board types, e.g. the REPL echoing what we
    # sent) are counted in `echoed` and dropped unless accept_requests.
    def __init__(self, on_text=None, accept_requests=False):
        self.on_text = on_text
        self.accept_requests = accept_requests
        self._state = _TEXT
        self._buf = bytearray()
        self.frames = 0
        self.corrupt = 0           # every frame start that did not give a valid frame
        self.errors = {}           # link error code -> count (E_TOO_LONG for overlong)
        self.overlong = 0
        self.truncated = 0         # a frame cut short by the next RS
        self.echoed = 0
        self.text_bytes = 0

    def _bad(self, code):
        self.corrupt += 1
        self.errors[code] = self.errors.get(code, 0) + 1

    def _text(self, data):
        self.text_bytes += len(data)
        if self.on_text is not None:
            try:
                self.on_text(bytes(data))
            except Exception:  # a faulty consumer must not stop frame parsing
                pass

    def _finish(self, out):
        err, ftype, fields = link.decode(self._buf)
        self._buf = bytearray()
        if err:
            self._bad(err)
        elif link.is_request(ftype) and not self.accept_requests:
            self.echoed += 1
        else:
            self.frames += 1
            out.append(Frame(ftype, fields))

    def feed(self, data):
        out = []
        data = bytes(data)
        i, n = 0, len(data)
        while i < n:
            if self._state == _TEXT:
                j = data.find(_RS, i)
                if j < 0:
                    self._text(data[i:])
                    break
                if j > i:
                    self._text(data[i:j])
                self._buf = bytearray(_RS)
                self._state = _FRAME
                i = j + 1
                continue
            # in a frame (or discarding an overlong one): stop at LF or at the next RS
            lf = data.find(_LF, i)
            end = n if lf < 0 else lf
            rs = data.find(_RS, i, end)
            stop = end if rs < 0 else rs
            if self._state == _FRAME:
                # copy at most one byte past the limit: the buffer stays bounded
                take = _LIMIT + 1 - len(self._buf)
                self._buf += data[i:stop if stop - i <= take else i + take]
                if len(self._buf) > _LIMIT:
                    self.overlong += 1
                    self._bad(link.E_TOO_LONG)
                    self._buf = bytearray()
                    self._state = _DISCARD
            if rs >= 0:  # a new frame starts: whatever was collected is cut short
                if self._state == _FRAME:
                    self.truncated += 1
                    self._bad(link.E_SYNTAX)
                self._buf = bytearray(_RS)
                self._state = _FRAME
                i = rs + 1
            elif lf >= 0:
                if self._state == _FRAME:
                    self._finish(out)
                self._state = _TEXT
                i = lf + 1
            else:
                i = n
        return out

    def stats(self):
        return {"frames": self.frames, "corrupt": self.corrupt, "overlong": self.overlong,
                "truncated": self.truncated, "echoed": self.echoed,
                "text_bytes": self.text_bytes,
                "errors": {link.ERROR_NAMES.get(k, str(k)): v for k, v in self.errors.items()}}
