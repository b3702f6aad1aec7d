# Every error meant for the user reaches the user one way: `surepick <verb>: <message>` on stderr,
# one line, nothing on stdout, no traceback, the exit code of its kind (2 bad input, 1 the board or
# the run failed). The classes are found by walking UserError's subclasses after importing every
# host module, so a new domain error is covered the day it is written. Any other exception is a
# bug, and its traceback must still show.
import importlib
import os
import pkgutil
import textwrap
from pathlib import Path

import pytest

import surepick.host as host_package
from surepick.host.cli import main as cli
from surepick.host.user_error import FAILED, USAGE, BadInput, Failure, UserError
from tests.support.cli import surepick


def _board_side_modules():
    # The virtual board's modules that run inside MicroPython (they import `machine`): not host code.
    from surepick.host.vboard.board import BOOT_SHIM
    from surepick.host.vboard.runtime import BOARD_MODULES
    return {"surepick.host.vboard." + Path(src).stem for src, _ in BOARD_MODULES} | {
        "surepick.host.vboard." + Path(BOOT_SHIM).stem}


def _every_user_error():
    skip = _board_side_modules()
    for m in pkgutil.walk_packages(host_package.__path__, "surepick.host."):
        if m.name not in skip and not m.name.endswith(".__main__"):
            importlib.import_module(m.name)
    found, todo = set(), [UserError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


USER_ERRORS = _every_user_error()


def _instance(cls, message):
    # Most take the message alone; a few build it from parts (JobFileError, MissingExtra): give
    # those the message as their only argument, as Exception does.
    try:
        return cls(message)
    except TypeError:
        e = cls.__new__(cls)
        Exception.__init__(e, message)
        return e


def test_the_walk_finds_the_domain_errors():
    # The walk is only as good as the imports: errors of each layer must be in it.
    names = {c.__name__ for c in USER_ERRORS}
    for expected in ("LinkError", "NoBoard", "DescriptionError", "JobFileError", "SweepError",
                     "EmulatorError", "InstallError", "StateError", "ControlError", "CommandError"):
        assert expected in names


def _demo_raising(err, monkeypatch, capsys):
    # `surepick demo` whose work raises `err`, run through the CLI's main -> (exit code, stdout, stderr)
    demo = importlib.import_module("surepick.host.cli.demo")

    def run(args):
        raise err

    monkeypatch.setattr(demo, "run", run)
    rc = cli.main(["demo"])
    out, stderr = capsys.readouterr()
    return rc, out, stderr


@pytest.mark.parametrize("cls", USER_ERRORS, ids=lambda c: c.__qualname__)
def test_each_error_meant_for_the_user_is_one_line_and_its_code(cls, monkeypatch, capsys):
    message = "%s: the input at hand cannot be used; give another" % cls.__name__
    err = _instance(cls, message)
    assert str(err) == message
    # its kind is said by its class: bad input or a failure (CommandError says it per instance)
    assert issubclass(cls, (BadInput, Failure)) or cls in (UserError, cli.CommandError)
    assert err.exit_code in (USAGE, FAILED)

    rc, out, stderr = _demo_raising(err, monkeypatch, capsys)
    assert (rc, out, stderr) == (err.exit_code, "", "surepick demo: %s\n" % message)


@pytest.mark.parametrize("module,name,args,message", [
    # the board's own input checks (firmware/, shared_fsm/: below host/, no UserError there),
    # each built as the board code builds it; the message is the class's own wording
    ("surepick.firmware.settings", "SettingsError", ("pin_beam", "GP13 is the e-stop's"),
     "setting 'pin_beam': GP13 is the e-stop's"),
    ("surepick.shared_fsm.config", "ConfigError", ("move_timeout_ms", "above 60000"),
     "config field 'move_timeout_ms': above 60000"),
    ("surepick.shared_fsm.arm", "ArmError", ("geometry.forearm_mm", "must be at least 20"),
     "arm description field 'geometry.forearm_mm': must be at least 20"),
    ("surepick.shared_fsm.arm", "Unreachable", (0, "x=900.0 y=0.0 z=10.0 pitch=-90.0"),
     None),
])
def test_a_board_side_input_error_is_bad_input_in_one_line(module, name, args, message, monkeypatch,
                                                          capsys):
    cls = getattr(importlib.import_module(module), name)
    err = cls(*args)
    rc, out, stderr = _demo_raising(err, monkeypatch, capsys)
    if message is None:                       # Unreachable names its reason from its own table
        assert str(err).startswith("pose unreachable (") and str(err).endswith(args[1])
        message = str(err)
    assert (rc, out, stderr) == (USAGE, "", "surepick demo: %s\n" % message)


def test_a_plain_value_error_is_still_a_bug():
    # only the board's named checks are bad input; any other ValueError is not caught as one
    demo = importlib.import_module("surepick.host.cli.demo")
    real = demo.run
    try:
        demo.run = lambda args: int("not a number")
        with pytest.raises(ValueError):
            cli.main(["demo"])
    finally:
        demo.run = real


@pytest.mark.parametrize("module,name,code", [
    # the codes users saw before there was one base class, as `surepick --help` states them (1 the
    # board failed, 2 bad usage) and docs/arm-description.md (a bad description is refused, exit 2)
    ("surepick.host.link.errors", "NoBoard", 1),
    ("surepick.host.deploy.errors", "DeployError", 1),
    ("surepick.host.engines.rp2040.chip", "EmulatorError", 1),
    ("surepick.host.engines.rp2040.chip", "FirmwareMissing", 2),
    ("surepick.host.arms.files", "DescriptionError", 2),
    ("surepick.host.teleop.jobfile", "JobFileError", 2),
    ("surepick.host.monitor.store", "StoreError", 2),
    ("surepick.host.vboard.control", "ControlError", 2),
])
def test_the_codes_users_see_stay(module, name, code):
    assert getattr(importlib.import_module(module), name).exit_code == code


# A verb's run replaced before the console script starts (sitecustomize runs at interpreter start):
# the real `surepick` entry point, a real process, its real stderr.
_INJECT = """
    import surepick.host.cli.demo as demo
    from surepick.host.link.errors import NoBoard

    def run(args):
        if {bug!r}:
            {{}}["a key the code forgot"]      # a bug: a plain exception no one meant for the user
        raise NoBoard("no board on socket://127.0.0.1:1: plug it in or give --port")

    demo.run = run
"""


def _surepick_with(tmp_path, bug):
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(_INJECT.format(bug=bug)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return surepick("demo", env=env, timeout=60)


def test_an_error_meant_for_the_user_shows_no_traceback(tmp_path):
    r = _surepick_with(tmp_path, bug=False)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "surepick demo: no board on socket://127.0.0.1:1: plug it in or give --port\n"


def test_a_bug_still_shows_its_traceback(tmp_path):
    r = _surepick_with(tmp_path, bug=True)
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr
    assert r.stderr.rstrip().endswith("KeyError: 'a key the code forgot'")
    assert "surepick demo:" not in r.stderr

