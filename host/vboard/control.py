# The virtual board's control channel: what a bench offers besides the Pico's serial port (put
# the part back, look at the world), on a loopback TCP port of its own, so it works while the
# board's console is busy with the monitor or mpremote.
#
# Protocol: one request line, one JSON reply line, then the server closes.
#   "status"       -> {"ok": true, "console": [...], "scenario": ..., "world": N, "plant_ms": ...,
#                     "verdict": [...]}
#   "reset-world"  -> {"ok": true, "world": N, "previous": [outcome, reason]} or
#                     {"ok": false, "error": "..."}
#   "look"         -> {"ok": true, "joints_deg": [...], "jaw_mm": ..., "plant_ms": ...}: where the
#                     arm physically is, as a person at the bench sees it (bring-up's stand-in operator)
#   "estop-press", "estop-release", "switch-press", "switch-release", "beam-block", "beam-clear",
#   "part-remove", "part-in-jaw", "part-on-pad"
#                  -> {"ok": true, "done": ...}: a hand on the bench's e-stop, finger switch, beam,
#                     taking the part off its pad, holding it between the open jaws, or putting it
#                     back on its pad (the rest of the world as it is; reset-world: a fresh world)
# Each running board lists itself in the per-user registry (registry.py), one JSON file per board
# naming its console addresses and control address, so a tool given the console port the user
# already knows (socket://127.0.0.1:PORT or /dev/pts/N) finds the control address; a file whose
# process is gone is ignored and removed.
import json
import socket
import threading

from surepick.host.vboard.registry import Registration, registry_dir, running_boards  # noqa: F401 (board.py, tests)
from surepick.host.user_error import BadInput

_MAX_LINE = 256


class ControlError(BadInput):
    pass


# ---- the registry (registry.py) ----

def _same_console(a, b):
    # socket://localhost:5000 and socket://127.0.0.1:5000 are one port.
    if a == b:
        return True
    pre = "socket://"
    if not (a.startswith(pre) and b.startswith(pre)):
        return False
    ha, _, pa = a[len(pre):].rpartition(":")
    hb, _, pb = b[len(pre):].rpartition(":")
    loop = ("127.0.0.1", "localhost", "[::1]", "::1")
    return pa == pb and ha in loop and hb in loop


def find_board(port):
    """The registry entry of the running virtual board serving `port`; ControlError if none."""
    for entry in running_boards():
        if any(_same_console(port, c) for c in entry.get("console", ())):
            return entry
    raise ControlError("no virtual board is serving %s on this machine (`surepick board` prints "
                       "its address when it starts)" % port)


def board_clock(port):
    """For a port a board on this machine serves with a control channel (`surepick board`, the
    virtual board or the emulated RP2040): () -> seconds of that board's time, None when it cannot
    be read (no world, or the board gone). None for any other port: a Pico's time is the wall's."""
    try:
        address = find_board(port)["control"]
    except (ControlError, KeyError):
        return None

    def now():
        try:
            return request(address, "status", timeout=5.0)["plant_ms"] / 1000.0
        except (ControlError, KeyError, TypeError):
            return None
    return now


# ---- the server (inside the board's supervisor) ----

class ControlServer:
    """Serves `handlers` ({"command": callable() -> dict}) on a loopback port, one thread."""

    def __init__(self, handlers, host="127.0.0.1"):
        self._handlers = handlers
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(4)
        self.address = "%s:%d" % self._sock.getsockname()[:2]
        self._thread = threading.Thread(target=self._serve, name="vboard-control", daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return                      # closed
            with conn:
                try:
                    conn.settimeout(5)
                    conn.sendall((json.dumps(self._answer(_read_line(conn))) + "\n").encode())
                except OSError:
                    pass

    def _answer(self, line):
        handler = self._handlers.get(line)
        if handler is None:
            return {"ok": False, "error": "unknown command %r; known: %s"
                    % (line[:40], ", ".join(sorted(self._handlers)))}
        try:
            return dict(handler(), ok=True)
        except ControlError as e:
            return {"ok": False, "error": str(e)}
        except Exception as e:  # the board goes on; the caller hears what went wrong
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}

    def close(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(5)


def _read_line(conn):
    buf = b""
    while b"\n" not in buf and len(buf) < _MAX_LINE:
        chunk = conn.recv(_MAX_LINE)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\n", 1)[0].decode("ascii", "replace").strip()


# ---- the client ----

def request(address, command, timeout=30.0):
    """Send one command to a board's control address ("HOST:PORT"); -> the reply dict.
    ControlError when the board cannot be reached or refuses."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(command.encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
    except (OSError, ValueError) as e:
        raise ControlError("cannot reach the virtual board's control port %s: %s" % (address, e)) from None
    try:
        reply = json.loads(buf)
    except ValueError:
        raise ControlError("the virtual board answered something that is not JSON: %r" % buf[:200]) from None
    if not reply.get("ok"):
        raise ControlError(reply.get("error") or "refused")
    return reply
