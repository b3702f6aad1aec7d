# No test sees a person's boards (issue 25, item 4): the suite runs in runtime and config
# directories of its own (conftest.py). A "person" lists a board in their registry and sets
# SUREPICK_PORT and a config file's port, then runs a test of this file in a pytest of its own:
# inside, `--port auto` finds nothing and the default port is not theirs.
import os
import subprocess
import sys
from pathlib import Path

from surepick.host.vboard.registry import Registration, running_boards
from tests.support.cli import surepick

HERE = Path(__file__).resolve()
PERSON_PORT = "socket://127.0.0.1:4711"


def test_inside_the_suite_auto_finds_no_board_and_the_default_port_is_auto():
    # Run on its own it checks the suite's own directories; run by the test below, a person's
    # board, $SUREPICK_PORT and config file are there to be (not) seen.
    assert running_boards() == []
    assert "SUREPICK_PORT" not in os.environ
    r = surepick("job", "status")
    assert r.returncode != 0 and "no virtual board running" in r.stderr, r.stderr


def test_a_persons_board_port_and_config_do_not_reach_a_test(tmp_path):
    runtime, config = tmp_path / "rt", tmp_path / "config"
    runtime.mkdir(mode=0o700)
    (config / "surepick").mkdir(parents=True)
    (config / "surepick" / "config.toml").write_text('port = "%s"\n' % PERSON_PORT)
    person = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), XDG_CONFIG_HOME=str(config),
                  SUREPICK_PORT=PERSON_PORT)
    saved = os.environ.copy()
    os.environ.update(person)
    try:
        with Registration({"console": [PERSON_PORT], "kind": "virtual board"}):
            assert [e["console"] for e in running_boards()] == [[PERSON_PORT]]    # the person sees it
            r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                "%s::test_inside_the_suite_auto_finds_no_board_and_the_default_port_is_auto" % HERE],
                               capture_output=True, text=True, timeout=300, env=person, cwd=HERE.parent.parent)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout, r.stdout
