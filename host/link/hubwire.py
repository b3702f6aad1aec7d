# The messages between a link hub (hub.py) and its clients on the hub's Unix socket: a kind byte,
# a 4-byte big-endian length, the payload. Board bytes travel as DATA untouched, so a client's
# FrameParser sees exactly what it would see on the port; what the hub itself has to say travels
# beside them as JSON (NOTICE), never mixed into the board's text.
import json
import struct

HELLO = b"H"     # client -> hub, JSON: {"client": name, "pid": n, "role": "link" | "query"}
WELCOME = b"W"   # hub -> client, JSON: {"ok": true, ...hub info} or {"ok": false, "error": text}
DATA = b"D"      # hub -> client: board bytes; client -> hub: request frame lines for the board
NOTICE = b"N"    # hub -> client, JSON: {"event": "lent" | "returned" | "board_lost" | "refused", "text": ...}
QUERY = b"Q"     # client -> hub, JSON: {"op": "status" | "stop"}
ANSWER = b"A"    # hub -> client, JSON

_HEAD = struct.Struct(">cI")
MAX_MESSAGE = 1 << 20


class WireError(Exception):
    """A peer that does not speak this protocol (or a message too large)."""


def pack(kind, payload):
    if not isinstance(payload, (bytes, bytearray)):
        payload = json.dumps(payload).encode()
    return _HEAD.pack(kind, len(payload)) + bytes(payload)


class Reader:
    # feed(bytes) -> [(kind, payload bytes)] of the whole messages received so far.
    def __init__(self):
        self._buf = bytearray()

    def feed(self, data):
        self._buf += data
        out = []
        while len(self._buf) >= _HEAD.size:
            kind, n = _HEAD.unpack_from(self._buf)
            if kind not in (HELLO, WELCOME, DATA, NOTICE, QUERY, ANSWER) or n > MAX_MESSAGE:
                raise WireError("not a surepick hub message (kind %r, %d bytes)" % (kind, n))
            if len(self._buf) < _HEAD.size + n:
                break
            out.append((kind, bytes(self._buf[_HEAD.size:_HEAD.size + n])))
            del self._buf[:_HEAD.size + n]
        return out


def load(payload):
    try:
        v = json.loads(payload)
    except ValueError:
        raise WireError("a hub message that is not JSON: %r" % payload[:80]) from None
    if not isinstance(v, dict):
        raise WireError("a hub message that is not a JSON object")
    return v
