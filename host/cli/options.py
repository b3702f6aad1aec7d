# Options and input files that several verbs share, each defined once: the board's port, and
# the JSON files (`--config`, `--plant`, `fit --start`) that are read before any work starts.
from surepick.host.user_error import USAGE
from surepick.host.cli.errors import CommandError

PORT_HELP = "serial device, pty, socket://HOST:PORT or auto"
PORT_DEFAULT_HELP = ("; default: $SUREPICK_PORT, else `port` in ~/.config/surepick/config.toml, else auto "
                     "(the one USB Pico or running virtual board)")


def add_port_argument(parser, required=True):
    # Every verb that talks to a board takes its port this way (one help text, one
    # resolution path: board_port below). `required=False`: the verb works without a board
    # (link status); otherwise a missing --port takes the default (host/link/ports.py).
    parser.add_argument("--port", metavar="PORT",
                        help=PORT_HELP + (PORT_DEFAULT_HELP if required else ""))


def add_force_arguments(parser, doing):
    # The verbs that take a board over (deploy, config set, calibrate) refuse a busy arm unless
    # forced (host/link/busy.py); `doing` completes "... before <doing>".
    parser.add_argument("--force", action="store_true",
                        help="if the arm is busy, abort its job and wait until it is at rest before "
                             "%s (a held part stays held)" % doing)
    parser.add_argument("--rest-timeout", type=float, default=20.0, metavar="S",
                        help="with --force: give up if the arm is not at rest S seconds after the "
                             "abort (default 20)")


def board_port(args):
    # The port to use: the one named, or the default, with `auto` resolved to a board
    # (host/link/ports.py). A near miss (`localhost:5000`) is bad usage, with a hint; NoBoard
    # (a LinkError) when nothing is found.
    from surepick.host.link.ports import BadPort, resolve_port
    try:
        return resolve_port(args.port)
    except BadPort as e:
        raise CommandError("--port %s" % e, USAGE) from None


def board_link(args, who, stay=False, **kw):
    # A LinkClient for the board at --port: through the link hub when one serves the port, else
    # the port itself. stay=True (a client that stays connected, like `job start --wait`) starts
    # a hub when none serves the port, so other tools can use the board meanwhile. `who` names
    # the client in `surepick link status` ("job start").
    # A board this machine serves with a world runs slower than a Pico: replies are waited for
    # in its time, not the wall clock's (link/client.py _ReplyWait).
    from surepick.host.link import hub_client
    from surepick.host.link.client import LinkClient
    from surepick.host.vboard.control import board_clock
    port = board_port(args)
    c = LinkClient(port, hub=hub_client.AUTO if stay else hub_client.USE, name="surepick " + who, **kw)
    c.board_clock = board_clock(port)
    return c


def pose(text):
    # argparse type for a pose "X,Y,Z[,PITCH]" in mm and degrees -> 4 floats
    import argparse

    from surepick.host.link.jobs import parse_pose
    try:
        return parse_pose(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def key_value(text):
    # argparse type for `--param KEY=VALUE` -> (key, value), both stripped.
    import argparse
    if "=" not in text:
        raise argparse.ArgumentTypeError("needs KEY=VALUE, got %r" % text)
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def json_object_file(path, what):
    # -> the JSON object in `path`, read within bounds (host/json_file.py); JsonFileError (bad
    # input, exit 2) when it cannot be. `what` names the file in the message ("config file x.json ...").
    from surepick.host import json_file
    return json_file.load_object(path, what + " file")


def config_overrides_file(path):
    # `--config FILE`: state-machine config overrides, checked now (a clear error here beats a
    # traceback in a worker process later).
    from surepick.shared_fsm.config import Config, value_of
    data = json_object_file(path, "config")
    try:
        data = {k: value_of(k, v) for k, v in data.items()}   # "resense": "always" is 2
        Config(data)
    except (ValueError, KeyError) as e:
        raise CommandError("config file %s: %s" % (path, _text(e)), USAGE) from None
    return data


def plant_params_file(path):
    # `--plant PLANT.json` / `fit --start`: plant parameters (e.g. from `surepick fit`), checked now.
    from surepick.host.cli.plant_file import check_plant_numbers
    from surepick.sim.params import PlantParams
    data = json_object_file(path, "plant")
    try:
        PlantParams.from_dict(data)
    except (ValueError, KeyError, TypeError) as e:
        raise CommandError("plant file %s: %s" % (path, _text(e)), USAGE) from None
    err = check_plant_numbers(data)
    if err:
        raise CommandError("plant file %s: %s" % (path, err), USAGE)
    return data


def _text(e):
    # KeyError's str() is the repr of its key; the others say what is wrong.
    return e.args[0] if isinstance(e, KeyError) and e.args else str(e)


def seed_arg(text):
    # argparse type for a random seed: a whole number 0..2**31-1 (what the simulator's
    # generators take; the run record checks the same range).
    import argparse

    from surepick.host.records.record_schema import SEED_MAX
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("a seed is a whole number 0..%d, got %r" % (SEED_MAX, text)) from None
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError("a seed is a whole number 0..%d, got %s" % (SEED_MAX, text))
    return v
