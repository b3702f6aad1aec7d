# Finding and opening the board's port: a serial device, a pty, or a URL pyserial opens
# (`socket://HOST:PORT`, the virtual board). `auto` resolves to the one USB Pico. Every verb
# that talks to a board resolves its --port here (cli/options.py), so a port feature is added
# in one place.
import os

from surepick.host.link.errors import NoBoard, PortBusy

PICO_USB_VID = 0x2E8A              # Raspberry Pi (RP2040 boards running MicroPython)
BUSY_TEXT = b"surepick-board: busy"  # the virtual board's answer to a second client


def is_url(port):
    return "://" in port


def find_pico_ports():
    # -> [(device, description)] of USB serial ports with the Raspberry Pi vendor id.
    from serial.tools import list_ports
    return [(p.device, p.description or "") for p in list_ports.comports()
            if p.vid == PICO_USB_VID]


def resolve_port(port):
    # "auto" -> the one Pico's device path; anything else is returned as given.
    if port != "auto":
        return port
    found = find_pico_ports()
    if not found:
        raise NoBoard("no Raspberry Pi Pico found (no USB serial port with vendor id %04X); "
                      "plug it in, or give --port /dev/ttyACM0 or socket://HOST:PORT" % PICO_USB_VID)
    if len(found) > 1:
        raise NoBoard("several Picos found (%s): choose one with --port"
                      % ", ".join(d for d, _ in found))
    return found[0][0]


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
        raise NoBoard("no board on %s: the device does not exist" % port)
    try:
        return serial.serial_for_url(port, baudrate=baudrate, timeout=read_timeout_s,
                                     write_timeout=2, exclusive=True)
    except (serial.SerialException, OSError, ValueError) as e:
        text = str(e)
        if "lock" in text.lower() or "busy" in text.lower():
            raise busy_error(port, holders_of(port) or ["another program"]) from None
        raise NoBoard("no board on %s: %s" % (port, text)) from None
