# The README runs: every ```sh block of README.md is executed as a user would paste it, in order
# (later blocks use what earlier ones made: the virtual board's flash, runs/), and every line must
# exit with the code it documents. Markers in a line's comment (`# test: ...`), documented in the
# README:
#   test: background      start it, wait for "serving on", stop it (by its pid) when the block ends
#   test: skip (why)      not run (scripts/test.sh is this test suite)
#   test: exit N          the exit code the line documents (default 0)
#   test: --opt V ...     run with these options instead (smaller counts)
# A line ending in a backslash continues on the next, as in a shell.
# Paths a user would share are moved into a temporary directory: /tmp/pico, runs/ (the working
# directory), and the fixed port 7713 becomes a free one, so parallel runs cannot collide.
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent
README_PORT = "7713"


class Line:
    def __init__(self, block, lineno, command, comment):
        self.block, self.lineno, self.command = block, lineno, command
        self.background = self.skip = False
        self.exit = 0
        self.options = []
        m = re.search(r"test:\s*(.*)$", comment)
        if m:
            words = shlex.split(m.group(1))
            i = 0
            while i < len(words):
                w = words[i]
                if w == "background":
                    self.background = True
                elif w == "skip":
                    self.skip = True
                    break
                elif w == "exit":
                    self.exit = int(words[i + 1])
                    i += 1
                elif w.startswith("--"):
                    self.options.append((w, words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--")
                                         else None))
                    i += 1 if self.options[-1][1] is not None else 0
                i += 1

    def argv(self, subst):
        args = shlex.split(subst(self.command))
        for opt, val in self.options:
            if opt in args:
                k = args.index(opt)
                if val is not None:
                    args[k + 1] = val
            else:
                args += [opt] + ([val] if val is not None else [])
        return args


def blocks(text=None):
    # -> [[Line]] for every ```sh block of the README.
    # A line ending in a backslash goes on on the next one, as in the shell a user pastes it into.
    text = README.read_text() if text is None else text
    out, cur, held = [], None, None
    for n, raw in enumerate(text.splitlines(), 1):
        if cur is None:
            if raw.strip() == "```sh":
                cur = []
            continue
        if raw.strip() == "```":
            assert held is None, "README line %d: a block ends in a backslash continuation" % held[0]
            out.append(cur)
            cur = None
            continue
        line = raw.strip()
        if held is not None:
            n, line = held[0], held[1] + " " + line
            held = None
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\") and "  #" not in line:
            held = (n, line[:-1].rstrip())
            continue
        command, _, comment = line.partition("  #")
        cur.append(Line(len(out), n, command.strip(), comment))
    return out


def test_every_block_is_understood_and_every_surepick_line_parses():
    # Quick: the markers parse and every `surepick ...` line is accepted by the command's own
    # argument parser (a renamed option breaks this test before anyone pastes it).
    from surepick.cli.main import _verb_of, build_parser
    found = blocks()
    assert len(found) >= 6
    for block in found:
        for line in block:
            args = line.argv(lambda s: s)
            assert args, line.lineno
            if args[0] != "surepick":
                continue
            parser = build_parser(_verb_of(args[1:]))
            try:
                parser.parse_args(args[1:])
            except SystemExit as e:
                pytest.fail("README line %d does not parse (%s): %s" % (line.lineno, e, line.command))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _substitutions(work, port):
    def subst(text):
        text = text.replace("/tmp/pico", str(work / "pico"))
        text = text.replace("127.0.0.1:%s" % README_PORT, "127.0.0.1:%s" % port)
        return re.sub(r"(^|\s)scripts/", r"\1%s/scripts/" % REPO, text)
    return subst


def _start_background(argv, env, cwd, where):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    seen = []
    deadline = time.time() + 90
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if "serving on" in line:
            return p
    p.kill()
    pytest.fail("%s: the background command never said it was serving:\n%s" % (where, "".join(seen)))


def _stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


@pytest.mark.slow
def test_every_readme_block_runs_and_exits_as_documented(tmp_path):
    env = dict(os.environ, PATH="%s%s%s" % (VENV_BIN, os.pathsep, os.environ.get("PATH", "")))
    env.pop("SUREPICK_PROGRESS", None)
    work = tmp_path
    port = _free_port()
    subst = _substitutions(work, port)
    ran = 0
    for block in blocks():
        background = []
        try:
            for line in block:
                if line.skip:
                    continue
                where = "README line %d" % line.lineno
                argv = line.argv(subst)
                if line.background:
                    background.append(_start_background(argv, env, work, where))
                    continue
                r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, timeout=1500)
                assert r.returncode == line.exit, "%s: `%s` exited %d, the README says %d\n%s\n%s" % (
                    where, " ".join(argv), r.returncode, line.exit, r.stdout[-3000:], r.stderr[-3000:])
                assert "Traceback" not in r.stderr, (where, r.stderr)
                ran += 1
        finally:
            _stop(background)
    assert ran >= 20
    assert (work / "runs" / "fitted" / "report.json").exists()
