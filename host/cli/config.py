# `surepick config get|set|list|diff|export|import`: the board's settings over the link
# (CONFIG_GET / CONFIG_SET, docs/protocol.md). The firmware validates and persists each one;
# the host checks values against the same tables first (host/board_settings.py), so a value out
# of range names its range and unit, and an import file is checked as a whole before anything
# is written. Settings that only take effect after a reboot (pins, loop rate, watchdog) say so.
import json

from surepick.host.user_error import FAILED, OK, USAGE
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.options import add_force_arguments, add_port_argument, board_link

ACTIONS = ("get", "set", "list", "diff", "export", "import")


def add_arguments(parser):
    parser.description = (
        "get KEY | set KEY VALUE: one setting. list: every setting with its value, default, range, unit and "
        "whether it needs a reboot. diff: only the settings that differ from the defaults; with --arm NAME|FILE "
        "also the board's arm description (/arm.json) against that one, field by field. export FILE: every "
        "setting as JSON. import FILE: set what FILE holds (an export, or {key: value}); the whole file is "
        "checked against the board's ranges and rules first, so a bad file changes nothing. Exit 0 done, 1 the "
        "board refused or failed, 2 bad input.")
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("words", metavar="ARG", nargs="*",
                        help="get: KEY; set: KEY VALUE (a whole number, in the unit its name says); "
                             "export/import: FILE")
    add_port_argument(parser)
    parser.add_argument("--json", action="store_true", help="list/diff: print JSON")
    parser.add_argument("--arm", metavar="NAME|FILE",
                        help="diff: compare the board's /arm.json with this description (a preset or a file)")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="S",
                        help="seconds to wait for each reply (default 3)")
    # set and import write flash, which only happens at rest: a busy arm is refused, its state
    # named. The others only read, so they are answered while the arm works.
    add_force_arguments(parser, "changing settings")


_WANTS = {"get": ("KEY",), "set": ("KEY", "VALUE"), "list": (), "diff": (), "export": ("FILE",),
          "import": ("FILE",)}


def _check_words(args):
    want = _WANTS[args.action]
    if len(args.words) < len(want):
        raise CommandError("`%s` needs a %s" % (args.action, want[len(args.words)]))
    if len(args.words) > len(want):
        extra = "VALUE" if args.action == "get" else "more than %s" % (" ".join(want) or "nothing")
        raise CommandError("`%s` takes no %s" % (args.action, extra))


def run(args):
    from surepick.host import board_settings as bs
    _check_words(args)
    act = args.action
    if act in ("get", "set"):
        key = args.words[0]
        if key not in bs.BY_KEY:
            raise CommandError(bs.unknown_key_text(key))
    if act == "set":
        value = _whole(args.words[1], key)
        err = bs.BY_KEY[key].check(value)
        if err:
            raise CommandError(err)
    if act == "export":
        from surepick.host.cli.outputs import check_writable_file
        check_writable_file(args.words[0], "export FILE")
    local_arm = None
    if getattr(args, "arm", None) is not None:
        if act != "diff":
            raise CommandError("--arm is for `diff`: it compares the board's /arm.json with that description")
        from surepick.host.cli.arm import load_arm
        local_arm = load_arm(args.arm)[0]
    if args.force and act not in ("set", "import"):
        raise CommandError("--force is for `set` and `import`: reading never interrupts the arm")
    target = _read_import(args.words[0]) if act == "import" else None
    with board_link(args, "config " + act) as c:
        if act in ("set", "import"):
            _check_idle(c, args)
        if act == "get":
            return _get(c, args, key)
        if act == "set":
            return _set(c, args, key, value)
        board = _read_board(c, args)
        if act == "import":
            return _import(c, args, board, target)
        board_arm = _read_board_arm(c, args) if local_arm is not None else None
    if act == "export":
        return _export(args, board)
    if local_arm is not None:
        return _diff_arm(args, board, board_arm, local_arm)
    return _list(args, board, only_changed=act == "diff")


def _read_board_arm(c, args):
    # -> the board's /arm.json bytes, or None when it has none (the reference arm)
    from surepick.host import board_arm
    try:
        return board_arm.read_bytes(c, args.timeout)
    except board_arm.NoArmFile:
        return None
    except ValueError as e:
        raise CommandError(str(e), FAILED) from None


def _diff_arm(args, board, raw, local_arm):
    # The settings' diff, then the description's: the board's /arm.json field by field against
    # the local one (--json: both in one object).
    from surepick.host import board_arm
    if args.json:
        settings = {s.key: {"value": v, "default": s.default} for s, v in _rows(board)
                    if v is not None and v != s.default}
        on_board, rows, head = board_arm.compare(raw, local_arm)
        diffs = None if rows is None else [{"field": k, "board": a, "local": b} for k, a, b in rows]
        print(json.dumps({"settings": settings, "arm": {"board": head, "differences": diffs}}, indent=1))
        return OK
    _list(args, board, only_changed=True)
    for line in board_arm.diff_report(raw, local_arm, args.arm):
        print(line)
    return OK


def _check_idle(c, args):
    from surepick.host.link import busy
    busy.check_idle_answering(c, args.force, args.rest_timeout, print, args.port)


def _whole(text, key):
    from surepick.host import board_settings as bs
    from surepick.shared_fsm.config import NAMED
    if text in NAMED.get(key, ()):
        return NAMED[key].index(text)          # resense on_retry is 1
    try:
        return int(text)
    except ValueError:
        raise CommandError("%s must be a whole number %s, got %r" % (key, bs.BY_KEY[key].range_text(), text)) from None


def _refused(r, args, key=None):
    from surepick.host.link.answers import refusal
    from surepick.shared_fsm import link
    if r.code == link.E_BAD_VALUE and key is not None:
        return CommandError("the board rejected %s" % key, FAILED)
    code = USAGE if r.code == link.E_UNKNOWN_KEY else FAILED
    return CommandError(refusal(r.code, r.payload, args.port), code)


def _get(c, args, key):
    from surepick.host import board_settings as bs
    from surepick.shared_fsm import link
    r = c.request(link.T_CONFIG_GET, (key,), args.timeout)
    if not r.ok:
        raise _refused(r, args)
    s = bs.BY_KEY[key]
    print("%s = %s" % (key, s.value_text(r.payload[1]) if len(r.payload) > 1 else "?"))
    return OK


def _set(c, args, key, value):
    from surepick.host import board_settings as bs
    from surepick.shared_fsm import link
    from surepick.host.link.busy import write_at_rest
    r = write_at_rest(c, link.T_CONFIG_SET, (key, value), args.timeout)
    if r.code == link.E_BAD_VALUE:
        # Alone it is in range (checked above): it clashes with another setting on the board.
        why = bs.check_whole(dict(_read_board(c, args), **{key: value}))
        raise CommandError("the board rejected %s = %d: %s" % (key, value, why or "inconsistent with another setting"),
                           USAGE)
    if not r.ok:
        raise _refused(r, args, None)
    s = bs.BY_KEY[key]
    got = r.payload[1] if len(r.payload) > 1 else value
    reboot = len(r.payload) > 2 and r.payload[2]
    print("%s = %s (saved%s)" % (key, s.value_text(got),
                                 "; takes effect after a reboot: power the board off and on, or `surepick "
                                 "deploy`" if reboot else ""))
    return OK


def _read_board(c, args):
    from surepick.host import board_settings as bs
    try:
        return bs.read_all(c, args.timeout)
    except ValueError as e:
        raise CommandError(str(e), FAILED) from None


def _rows(board):
    from surepick.host import board_settings as bs
    for s in bs.SETTINGS:
        v = board.get(s.key)
        yield s, v


def _list(args, board, only_changed):
    rows = [(s, v) for s, v in _rows(board) if not only_changed or (v is not None and v != s.default)]
    if args.json:
        print(json.dumps({s.key: {"value": v, "default": s.default, "min": s.lo, "max": s.hi, "unit": s.unit,
                                  "needs_reboot": s.reboot, "section": s.section} for s, v in rows}, indent=1))
        return OK
    if only_changed:
        if not rows:
            print("every setting is at its default (%d settings)" % len(board))
        for s, v in rows:
            print("%s = %s (default %s%s)%s" % (s.key, v, s.default, (" " + s.measure) if s.measure else "",
                                                 "  needs a reboot" if s.reboot else ""))
        return OK
    w = max(len(s.key) for s, _ in rows)
    print("%-*s %9s %8s  %-15s %-6s %s" % (w, "setting", "value", "default", "range", "reboot", "unit"))
    for s, v in rows:
        mark = "*" if v is not None and v != s.default else " "
        print("%-*s %8s%s %8s  %-15s %-6s %s" % (
            w, s.key, "-" if v is None else v, mark, s.default, "%d..%d" % (s.lo, s.hi),
            "yes" if s.reboot else "", s.unit))
    print("* differs from the default; reboot: takes effect after a reboot; %d settings" % len(rows))
    return OK


def _export(args, board):
    import os
    from surepick.host import board_settings as bs
    data = {"format": "surepick-config", "version": 1,
            "board": {s.key: board[s.key] for s in bs.SETTINGS if s.section == "board" and s.key in board},
            "machine": {s.key: board[s.key] for s in bs.SETTINGS if s.section == "machine" and s.key in board}}
    path = args.words[0]
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        raise cannot("write", path, e) from None
    print("%d settings written to %s" % (len(board), path))
    return OK


def _read_import(path):
    # -> {key: value} from an export ({"board": {...}, "machine": {...}}), the board's own
    # /config.json shape, or a flat {key: value}. Keys and single values checked here.
    from surepick.host.cli.options import json_object_file
    from surepick.host import board_settings as bs
    data = json_object_file(path, "config")
    flat = {}
    if "board" in data or "machine" in data:
        for section in ("board", "machine"):
            part = data.get(section) or {}
            if not isinstance(part, dict):
                raise CommandError("config file %s: %s must be an object of settings" % (path, section))
            flat.update(part)
        extra = [k for k in data if k not in ("board", "machine", "format", "version")]
        if extra:
            raise CommandError("config file %s: %s is not a setting section (use board and machine)" % (path, extra[0]))
    else:
        flat = dict(data)
    for k, v in flat.items():
        if k not in bs.BY_KEY:
            raise CommandError("config file %s: %s" % (path, bs.unknown_key_text(k)))
        err = bs.BY_KEY[k].check(v)
        if err:
            raise CommandError("config file %s: %s" % (path, err))
    return flat


def _import(c, args, board, target):
    from surepick.host import board_settings as bs
    from surepick.shared_fsm import link
    path = args.words[0]
    missing = sorted(k for k in target if k not in board)
    if missing:
        raise CommandError("config file %s: the board has no setting %s (an older firmware?)" % (path, missing[0]))
    whole = dict(board, **target)
    why = bs.check_whole(whole)
    if why:
        raise CommandError("config file %s: %s; nothing was changed" % (path, why))
    order, why = bs.write_order(board, whole)
    if why:
        raise CommandError("config file %s: %s; nothing was changed" % (path, why))
    from surepick.host.link.busy import write_at_rest
    done = []
    for key in order:
        r = write_at_rest(c, link.T_CONFIG_SET, (key, whole[key]), args.timeout)
        if not r.ok:
            undone = _undo(c, args, board, done)
            from surepick.host.link.answers import refusal
            raise CommandError("the board refused %s = %d (%s); %s" % (
                key, whole[key], refusal(r.code, r.payload, args.port), undone), FAILED)
        done.append(key)
    reboot = [k for k in order if bs.BY_KEY[k].reboot]
    for k in order:
        print("%s: %s -> %s" % (k, board[k], whole[k]))
    print("%d setting(s) changed, %d already as the file says%s" % (
        len(order), len(target) - len(order),
        "; %s take(s) effect after a reboot" % ", ".join(reboot) if reboot else ""))
    return OK


def _undo(c, args, board, done):
    # The board refused a value the host accepted (another firmware version): put back what
    # was already written, newest first, so a refused import changes nothing.
    from surepick.host.link.busy import write_at_rest
    from surepick.shared_fsm import link
    failed = []
    for key in reversed(done):
        try:
            r = write_at_rest(c, link.T_CONFIG_SET, (key, board[key]), args.timeout)
            if not r.ok:
                failed.append(key)
        except Exception:       # noqa: BLE001 -- report what could not be restored, whatever the cause
            failed.append(key)
    if failed:
        return "could not restore %s: check with `surepick config diff`" % ", ".join(failed)
    return "the %d setting(s) already written were restored" % len(done) if done else "nothing was changed"
