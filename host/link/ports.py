# Finding and opening the board's port: a serial device, a pty, or a URL pyserial opens
# (`socket://HOST:PORT`, the virtual board). Every verb that talks to a board resolves its --port
# here (cli/options.py), so a port feature is added in one place:
#   no --port  -> $SUREPICK_PORT, else `port = "..."` in the user config file
#                 (~/.config/surepick/config.toml), else auto
#   auto       -> the one board found: a USB Pico, a running virtual board (`surepick board`) or
#                 emulated RP2040 (both list themselves in the per-user board registry)
#   near misses get a hint: `localhost:5000` -> "did you mean socket://localhost:5000?"; a
#                 missing /dev/ttyACM1 -> the ports that are there
import os
import re

from surepick.host.link.errors import LinkError, NoBoard, PortBusy

PICO_USB_VID = 0x2E8A              # Raspberry Pi (RP2040 boards running MicroPython)
BUSY_TEXT = b"surepick-board: busy"  # the virtual board's answer to a second client
PORT_ENV = "SUREPICK_PORT"
# pyserial's URL handlers (serial.serial_for_url): anything else before "://" is a typo
_URL_SCHEMES = ("socket", "rfc2217", "loop", "spy", "hwgrep", "alt", "cp2110")


class BadPort(LinkError):
    """A --port that cannot be a port (a near miss gets its hint): bad usage."""


def is_url(port):
    return "://" in port


def find_pico_ports():
    # -> [(device, description)] of USB serial ports with the Raspberry Pi vendor id.
    from serial.tools import list_ports
    return [(p.device, p.description or "") for p in list_ports.comports()
            if p.vid == PICO_USB_VID]


def find_virtual_boards():
    # -> [(address, description)] of the virtual boards and emulated chips running on this
    # machine for this user (their registry entries; a dead process's entry is ignored).
    from surepick.host.vboard.registry import running_boards
    out = []
    for entry in running_boards():
        consoles = entry.get("console") or []
        if not consoles:
            continue
        kind = entry.get("kind") or "virtual board"
        bits = ["%s, pid %s" % (kind, entry.get("pid"))]
        if entry.get("flash"):
            bits.append("flash %s" % entry["flash"])
        if entry.get("scenario"):
            bits.append("scenario %s seed %s" % (entry["scenario"], entry.get("seed")))
        out.append((consoles[0], ", ".join(bits)))
    return out


def config_file():
    import platformdirs
    return os.path.join(platformdirs.user_config_dir("surepick", appauthor=False), "config.toml")


def default_port():
    # -> (port, where it came from) when no --port was given
    env = os.environ.get(PORT_ENV, "").strip()
    if env:
        return env, "$" + PORT_ENV
    path = config_file()
    try:
        with open(path, "rb") as f:
            import tomllib
            data = tomllib.load(f)
    except FileNotFoundError:
        return "auto", None
    except (OSError, ValueError) as e:   # tomllib.TOMLDecodeError is a ValueError
        raise BadPort("cannot read the config file %s: %s" % (path, e)) from None
    port = data.get("port")
    if port is None:
        return "auto", None
    if not isinstance(port, str) or not port.strip():
        raise BadPort("`port` in %s must be a non-empty string, like port = \"/dev/ttyACM0\"" % path)
    return port.strip(), path


def resolve_port(port):
    # The port to open: a missing --port gets the default, "auto" the one board found; a near
    # miss raises BadPort with its hint. Raises NoBoard when auto finds nothing (or too much).
    origin = None
    if port is None:
        port, origin = default_port()
    hint = near_miss(port)
    if hint:
        where = " (from %s)" % origin if origin else ""
        raise BadPort("%r%s is not a port: %s" % (port, where, hint))
    if port != "auto":
        return port
    picos = find_pico_ports()
    boards = find_virtual_boards()
    found = [(d, "Raspberry Pi Pico on USB" + (": " + desc if desc else "")) for d, desc in picos] + boards
    if not found:
        raise NoBoard("no Raspberry Pi Pico found (no USB serial port with vendor id %04X) and no "
                      "virtual board running; plug it in, start one (`surepick board`), or give "
                      "--port /dev/ttyACM0 or socket://HOST:PORT (or set %s)%s"
                      % (PICO_USB_VID, PORT_ENV, bootsel_text()))
    if len(found) > 1:
        raise NoBoard("several boards found, choose one with --port (or set %s): %s"
                      % (PORT_ENV, "; ".join("%s (%s)" % f for f in found)))
    return found[0][0]


def near_miss(port):
    # -> a hint for a --port that cannot be what the user meant, or None.
    if port == "auto" or port.startswith("/"):
        return None
    m = re.fullmatch(r"([A-Za-z0-9+.-]*)://(.*)", port)
    if m:
        scheme, rest = m.group(1).lower(), m.group(2)
        if scheme in _URL_SCHEMES:
            if scheme == "socket" and not re.fullmatch(r"(\[[0-9A-Fa-f:]+\]|[^:/\[\]]+):\d{1,5}", rest):
                return "a socket:// port is socket://HOST:PORT, like socket://127.0.0.1:5000"
            return None
        if re.fullmatch(r"[^/]*:\d{1,5}", rest):
            return "did you mean socket://%s?" % rest
        return "pyserial opens only %s URLs" % ", ".join(s + "://" for s in _URL_SCHEMES)
    if re.fullmatch(r"\d{1,5}", port):
        return "did you mean socket://127.0.0.1:%s?" % port
    if re.fullmatch(r"(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):\d{1,5}", port):
        return "did you mean socket://%s?" % port
    if re.fullmatch(r"(tty|cu\.)\S+", port) and os.path.exists("/dev/" + port):
        return "did you mean /dev/%s?" % port
    if re.fullmatch(r"(?i)com\d+", port) and os.name != "nt":
        return "COM ports are Windows names; here serial ports are /dev/tty*%s" % _present_text()
    return None


def present_ports():
    # -> [(port, description)]: serial ports and running virtual boards, for hints
    from serial.tools import list_ports
    out = [(p.device, p.description or "serial port") for p in list_ports.comports()]
    try:
        out += find_virtual_boards()
    except LinkError:
        pass
    return out


def bootsel_text():
    # "; a Pico in BOOTSEL mode is mounted at ...: `surepick install-micropython ...`" or ""
    from surepick.host import bootsel
    note = bootsel.note()
    return "; " + note if note else ""


def _present_text():
    found = present_ports()
    if not found:
        return "; none is present"
    return "; present: " + ", ".join("%s (%s)" % f for f in found)


def holders_of(device):
    # -> ["pid 123 (mpremote)", ...]: other processes that have `device` open, read from
    # /proc/*/fd (Linux; empty elsewhere or when we may not look).
    try:
        target = os.path.realpath(device)
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return []
    out = []
    for pid in pids:
        fd_dir = "/proc/%s/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("%s/%s" % (fd_dir, fd)) == target:
                    out.append("pid %s (%s)" % (pid, _process_name(pid)))
                    break
            except OSError:
                continue
    return out


def _process_name(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        if argv:
            # "python .../mpremote connect ..." says more than "python3"
            return " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:4]))
    except OSError:
        pass
    return "?"


def busy_error(port, holders):
    return PortBusy("%s is in use by %s; close it first (only one program can talk to the board)"
                    % (port, ", ".join(holders)))


def check_not_busy(port):
    # Device paths only: a second reader on a tty steals bytes from the first.
    if is_url(port):
        return
    holders = holders_of(port)
    if holders:
        raise busy_error(port, holders)


def open_serial(port, baudrate=115200, read_timeout_s=0.05):
    # -> an open pyserial object (non-blocking-ish reads). Raises NoBoard / PortBusy.
    import serial
    check_not_busy(port)
    if not is_url(port) and not os.path.exists(port):
        raise NoBoard("no board on %s: the device does not exist%s%s" % (port, _present_text(), bootsel_text()))
    try:
        return serial.serial_for_url(port, baudrate=baudrate, timeout=read_timeout_s,
                                     write_timeout=2, exclusive=True)
    except (serial.SerialException, OSError, ValueError) as e:
        text = str(e)
        if "lock" in text.lower() or "busy" in text.lower():
            raise busy_error(port, holders_of(port) or ["another program"]) from None
        raise NoBoard("no board on %s: %s" % (port, text)) from None
