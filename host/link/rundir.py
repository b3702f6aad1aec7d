# The per-user runtime directory where the link hubs (hub.py) leave their sockets and info
# files: $XDG_RUNTIME_DIR/surepick-hubs-<uid>, else the temp directory. It must be ours and
# private (0700): a hub's socket hands out the board's console, so nobody else may reach it.
import hashlib
import os
import tempfile
from pathlib import Path

from surepick.host.link.errors import LinkError

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]", "ip6-localhost")


def hubs_dir(create=True):
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    d = Path(base) / ("surepick-hubs-%d" % os.getuid())
    if create:
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            raise LinkError("cannot create the runtime directory %s: %s" % (d, e.strerror or e)) from None
    if d.exists():
        st = d.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise LinkError("the runtime directory %s is not private to you (owner uid %d, mode %o); "
                            "remove it or fix its permissions (chmod 700)"
                            % (d, st.st_uid, st.st_mode & 0o777))
    return d


def canonical_port(port):
    # One name per port: a device by its real path (/dev/serial/by-id/... is /dev/ttyACM0),
    # a loopback socket:// address with one spelling of the host.
    if port.startswith("socket://"):
        host, sep, num = port[len("socket://"):].rpartition(":")
        if sep and host.lower() in _LOOPBACK_NAMES:
            host = "127.0.0.1"
        return "socket://%s:%s" % (host, num) if sep else port
    if "://" in port:
        return port
    return os.path.realpath(port)


def hub_key(port):
    return hashlib.sha1(canonical_port(port).encode()).hexdigest()[:16]


_SUN_PATH_MAX = 107      # a Unix socket's path, in bytes (struct sockaddr_un, Linux)


def hub_paths(port, create=True):
    # -> (socket path, info file, lock file) of the hub for `port`
    d = hubs_dir(create)
    k = hub_key(port)
    return d / (k + ".sock"), d / (k + ".json"), d / (k + ".lock")


def check_socket_path(path):
    # A hub cannot serve on a path longer than a Unix socket takes: say what to do.
    if len(os.fsencode(str(path))) > _SUN_PATH_MAX:
        raise LinkError("the runtime directory %s is too deep for a Unix socket (%d bytes at most): "
                        "set XDG_RUNTIME_DIR to a shorter directory" % (os.path.dirname(str(path)), _SUN_PATH_MAX))


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
