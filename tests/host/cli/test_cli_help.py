# Every verb of the command table, and every action under it, answers --help with exit 0 and
# names each of its arguments; every verb that talks to a board takes the one --port option.
# The help is read from the installed `surepick` console script, as a user reads it.
import argparse
import os

import pytest

from surepick.host.cli.main import COMMANDS, build_parser
from surepick.host.link.ports import find_pico_ports
from tests.support.cli import surepick

# Verbs (and actions) that talk to a board, written out here rather than read from the code:
# each must take --port with the shared help text.
BOARD_VERBS = [("calibrate",), ("config",), ("deploy",), ("doctor",), ("hil",), ("monitor",),
               ("job", "start"), ("job", "abort"), ("job", "clear"), ("job", "status"),
               ("link", "serve"), ("link", "mpremote")]
PORT_HELP = "serial device, pty, socket://HOST:PORT or auto"
WIDE = dict(os.environ, COLUMNS="200")


def _parsers():
    # -> [(path of words, argparse parser)] for every verb and nested action.
    out = []

    def walk(path, parser):
        out.append((path, parser))
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, p in a.choices.items():
                    walk(path + (name,), p)

    for verb, _, _ in COMMANDS:
        top = build_parser(verb)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        walk((verb,), sub.choices[verb])
    return out


def _mentions(action):
    # What the help must show for an argument: its long option, or a positional's name.
    if isinstance(action, argparse._HelpAction):
        return ["--help"]
    if isinstance(action, argparse._SubParsersAction):
        return list(action.choices)
    if action.option_strings:
        return [max(action.option_strings, key=len)]
    if action.metavar:
        return [action.metavar]
    if action.choices:
        return [str(c) for c in action.choices]
    return [action.dest]


PARSERS = _parsers()


def test_the_table_and_the_walk_agree():
    # Guards the walk below against silently testing nothing.
    assert {p[0] for p, _ in PARSERS} == {v for v, _, _ in COMMANDS}
    assert ("sim", "run") in [p for p, _ in PARSERS] and ("log", "export") in [p for p, _ in PARSERS]


@pytest.mark.parametrize("path,parser", PARSERS, ids=[" ".join(p) for p, _ in PARSERS])
def test_help_exits_0_and_names_every_argument(path, parser):
    r = surepick(*path, "--help", env=WIDE, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.startswith("usage: surepick " + " ".join(path))
    missing = [m for a in parser._actions for m in _mentions(a) if m not in r.stdout]
    assert not missing, "help of `surepick %s` does not show %s" % (" ".join(path), missing)


@pytest.mark.parametrize("path", BOARD_VERBS, ids=[" ".join(p) for p in BOARD_VERBS])
def test_board_verbs_take_the_one_port_option(path, tmp_path):
    r = surepick(*path, "--help", env=WIDE, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--port PORT" in r.stdout
    assert PORT_HELP in " ".join(r.stdout.split())
    assert "SUREPICK_PORT" in r.stdout          # where the default comes from
    # No --port and no default: `auto`, which finds no board here (no Pico, no virtual board in
    # this empty runtime directory): one line naming --port and the default's variable, exit 1.
    alone = {k: v for k, v in os.environ.items() if k != "SUREPICK_PORT"}
    alone.update(XDG_RUNTIME_DIR=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    if find_pico_ports():
        pytest.skip("a Pico is plugged in: `auto` would find it")
    r = surepick(*path, *(["pot"] if path == ("calibrate",) else ["get", "telemetry_hz"] if path == ("config",)
                          else ["--scenario", "nominal"] if path == ("hil",) else []), env=alone, timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "--port" in r.stderr and "SUREPICK_PORT" in r.stderr, r.stderr


def test_surepick_alone_lists_every_verb_and_the_exit_codes():
    r = surepick(env=WIDE, timeout=60)
    assert r.returncode == 2
    for verb, _, _ in COMMANDS:
        assert verb in r.stdout
    text = " ".join(r.stdout.split())
    assert "0 done" in text and "1 it said no" in text and "2 bad usage" in text and "130 interrupted" in text
