# Options and input files that several verbs share, each defined once: the board's port, and
# the JSON files (`--config`, `--plant`, `fit --start`) that are read before any work starts.
from surepick.cli import exitcodes
from surepick.cli.errors import CommandError

PORT_HELP = "serial device, pty, socket://HOST:PORT or auto"


def add_port_argument(parser, required=True):
    # Every verb that talks to a board takes its port this way (one help text, one
    # resolution path: board_port below).
    parser.add_argument("--port", required=required, metavar="PORT", help=PORT_HELP)


def board_port(args):
    # The port the user named, with `auto` resolved to a device (host/link/ports.py).
    # Raises NoBoard (a LinkError) when nothing is found.
    from surepick.host.link.ports import resolve_port
    return resolve_port(args.port)


def key_value(text):
    # argparse type for `--param KEY=VALUE` -> (key, value), both stripped.
    import argparse
    if "=" not in text:
        raise argparse.ArgumentTypeError("needs KEY=VALUE, got %r" % text)
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def json_object_file(path, what):
    # -> the JSON object in `path`. CommandError (usage) when it cannot be read or is not an
    # object; `what` names the file in the message ("config file x.json ...").
    import json
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise CommandError("cannot read the %s file %s: %s" % (what, path, e.strerror or e),
                           exitcodes.USAGE) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CommandError("%s file %s is not valid JSON: %s" % (what, path, e), exitcodes.USAGE) from None
    if not isinstance(data, dict):
        raise CommandError("%s file %s must hold a JSON object" % (what, path), exitcodes.USAGE)
    return data


def config_overrides_file(path):
    # `--config FILE`: state-machine config overrides, checked now (a clear error here beats a
    # traceback in a worker process later).
    from surepick.shared_fsm.config import Config
    data = json_object_file(path, "config")
    try:
        Config(data)
    except (ValueError, KeyError) as e:
        raise CommandError("config file %s: %s" % (path, _text(e)), exitcodes.USAGE) from None
    return data


def plant_params_file(path):
    # `--plant PLANT.json` / `fit --start`: plant parameters (e.g. from `surepick fit`), checked now.
    from surepick.cli.plant_file import check_plant_numbers
    from surepick.sim.params import PlantParams
    data = json_object_file(path, "plant")
    try:
        PlantParams.from_dict(data)
    except (ValueError, KeyError, TypeError) as e:
        raise CommandError("plant file %s: %s" % (path, _text(e)), exitcodes.USAGE) from None
    err = check_plant_numbers(data)
    if err:
        raise CommandError("plant file %s: %s" % (path, err), exitcodes.USAGE)
    return data


def _text(e):
    # KeyError's str() is the repr of its key; the others say what is wrong.
    return e.args[0] if isinstance(e, KeyError) and e.args else str(e)


def seed_arg(text):
    # argparse type for a random seed: a whole number 0..2**31-1 (what the simulator's
    # generators take; the run record checks the same range).
    import argparse

    from surepick.records.record_schema import SEED_MAX
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("a seed is a whole number 0..%d, got %r" % (SEED_MAX, text)) from None
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError("a seed is a whole number 0..%d, got %s" % (SEED_MAX, text))
    return v
