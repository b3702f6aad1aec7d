# The README and the docs run: every ```sh block of README.md and of each docs/*.md is executed as
# a user would paste it, each file in a scratch directory of its own, its blocks in order (later
# blocks use what earlier ones made: the virtual board's flash, runs/), and every line must exit
# with the code it documents. Markers in a line's comment (`# test: ...`), documented in
# docs/doc-blocks.md:
#   test: background      start it, wait until it prints its ready text ("serving on" unless
#                         `ready "TEXT"` says otherwise), stop it (by its pid) when the block ends;
#                         with `exit N` it is not stopped but waited for, and must exit N
#   test: background keep the same, but it lives on through the following blocks of its section
#                         (the terminal it stands for stays open) and is stopped when the section ends
#   test: skip (why)      not run: it needs a device or a person (or is this test suite itself);
#                         the reason in brackets is required
#   test: exit N          the exit code the line documents (default 0)
#   test: --opt V ...     run with these options instead (smaller counts); an option the line
#                         repeats is replaced in order (the second `--param` replaces the second)
# A line ending in a backslash continues on the next, as in a shell.
# Paths a user would share are moved into a temporary directory: /tmp/pico, runs/ (the working
# directory), and the fixed port 7713 becomes a free one, so parallel runs cannot collide. The run
# has its own runtime, config and data directories (XDG_*): `auto` sees only the boards this test
# starts, and the monitor's default database is not the user's.
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
# Every page whose ```sh blocks run: the README first, then docs/ by name.
DOC_FILES = [README] + sorted((REPO / "docs").glob("*.md"))
# What a page's blocks must leave behind in their scratch directory (beyond exiting as documented).
LEAVES = {
    "README.md": ["runs/first/report.json"],
    "simulator.md": ["runs/batch/summary.json"],
    "sweeps.md": ["runs/dwell/cells.csv"],
    "sim-vs-hardware.md": ["runs/fitted/report.json"],
    "host-tools.md": ["bench.db", "runs/bench/run.json"],
}
VENV_BIN = Path(sys.executable).parent
README_PORT = "7713"
KEYWORDS = ("background", "keep", "ready", "skip", "exit")


class Line:
    def __init__(self, block, lineno, command, comment, section="", page="README.md"):
        self.block, self.lineno, self.command, self.section, self.page = block, lineno, command, section, page
        self.background = self.keep = self.skip = self.exit_given = False
        self.exit = 0
        self.ready = "serving on"
        self.options = []
        m = re.search(r"test:\s*(.*)$", comment)
        if m:
            words = shlex.split(m.group(1))
            i = 0
            while i < len(words):
                w = words[i]
                if w == "background":
                    self.background = True
                elif w == "keep":
                    assert self.background, "%s line %d: `keep` is for a background line" % (page, lineno)
                    self.keep = True
                elif w == "ready":
                    self.ready = words[i + 1]
                    i += 1
                elif w == "skip":
                    # explicit and visible: the page says why the line is not run
                    assert re.match(r"\(.+\)", " ".join(words[i + 1:])), \
                        "%s line %d: `skip` needs its reason in brackets: skip (why)" % (page, lineno)
                    self.skip = True
                    break
                elif w == "exit":
                    self.exit, self.exit_given = int(words[i + 1]), True
                    i += 1
                elif w.startswith("--"):
                    has_value = i + 1 < len(words) and not words[i + 1].startswith("--") and words[i + 1] not in KEYWORDS
                    self.options.append((w, words[i + 1] if has_value else None))
                    i += 1 if self.options[-1][1] is not None else 0
                else:
                    raise AssertionError("%s line %d: unknown test marker %r" % (page, lineno, w))
                i += 1

    def argv(self, subst):
        args = shlex.split(subst(self.command))
        used = {}
        for opt, val in self.options:
            # the k-th time the marker names an option replaces the k-th time the line has it
            k = used[opt] = used.get(opt, -1) + 1
            at = [j for j, a in enumerate(args) if a == opt]
            if k < len(at):
                if val is not None:
                    args[at[k] + 1] = val
            else:
                args += [opt] + ([val] if val is not None else [])
        return args


def blocks(text=None, path=README):
    # -> [[Line]] for every ```sh block of the page (the README unless a path or text is given).
    # A line ending in a backslash goes on on the next one, as in the shell a user pastes it into.
    text = path.read_text() if text is None else text
    page = path.name
    out, cur, held, section = [], None, None, ""
    for n, raw in enumerate(text.splitlines(), 1):
        if cur is None:
            if raw.startswith("## "):
                section = raw[3:].strip()
            if raw.strip() == "```sh":
                cur = []
            continue
        if raw.strip() == "```":
            assert held is None, "%s line %d: a block ends in a backslash continuation" % (page, held[0])
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
        cur.append(Line(len(out), n, command.strip(), comment, section, page))
    return out


def _pages_with_blocks():
    return [p for p in DOC_FILES if blocks(path=p)]


def test_every_block_is_understood_and_every_surepick_line_parses():
    # Quick: the markers parse and every `surepick ...` line is accepted by the command's own
    # argument parser (a renamed option breaks this test before anyone pastes it).
    from surepick.host.cli.main import _verb_of, build_parser
    lines = 0
    for page in DOC_FILES:
        for block in blocks(path=page):
            for line in block:
                args, _into = _redirect(line.argv(lambda s: s))
                assert args, (page.name, line.lineno)
                lines += 1
                if args[0] != "surepick":
                    continue
                parser = build_parser(_verb_of(args[1:]))
                try:
                    parser.parse_args(args[1:])
                except SystemExit as e:
                    pytest.fail("%s line %d does not parse (%s): %s" % (page.name, line.lineno, e, line.command))
    assert lines >= 40, lines      # the pages' blocks were found at all


def test_a_skip_without_its_reason_is_refused():
    # `skip` is explicit and visible: a bare one is an error that names the page and the line.
    with pytest.raises(AssertionError, match=r"x.md line 2: `skip` needs its reason"):
        blocks(text="```sh\nsurepick demo   # test: skip\n```\n", path=Path("x.md"))
    (line,), = blocks(text="```sh\nsurepick demo   # test: skip (a person types)\n```\n", path=Path("x.md"))
    assert line.skip


def _redirect(args):
    # `CMD > FILE` as the shell does it: -> (the command's words, the file its stdout goes to or None)
    if ">" not in args:
        return args, None
    at = args.index(">")
    assert at == len(args) - 2, "a redirect is the line's last two words: %s" % " ".join(args)
    return args[:at], args[at + 1]


def test_a_redirect_sends_the_output_to_its_file():
    assert _redirect(["surepick", "arm", "show", "mearm", ">", "my_arm.toml"]) == (
        ["surepick", "arm", "show", "mearm"], "my_arm.toml")
    assert _redirect(["surepick", "arm", "list"]) == (["surepick", "arm", "list"], None)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _substitutions(work, port):
    def subst(text):
        text = re.sub(r"/tmp/(\w+)", lambda m: str(work / m.group(1)), text)   # every scratch dir: fresh
        text = text.replace("127.0.0.1:%s" % README_PORT, "127.0.0.1:%s" % port)
        return re.sub(r"(^|\s)(scripts|tools|bench)/", r"\1%s/\2/" % REPO, text)   # the checkout's own
    return subst


class Background:
    # A line a user leaves running in a terminal of its own: started, waited for until it prints
    # its ready text, its output read all along (a full pipe would stall it) for the messages below.
    def __init__(self, line, argv, env, cwd):
        self.line, self.where = line, "%s line %d" % (line.page, line.lineno)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     cwd=cwd)
        self.seen = []
        ready = threading.Event()

        def read():
            for text in self.proc.stdout:
                self.seen.append(text)
                if line.ready in text:
                    ready.set()
            ready.set()
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(90) or self.proc.poll() is not None and not any(line.ready in t for t in self.seen):
            self.proc.kill()
            pytest.fail("%s: the background command never printed %r:\n%s" % (self.where, line.ready,
                                                                               "".join(self.seen)))

    def end(self):
        # -> a failure message, or None. A line with a documented exit code is waited for; the
        # others are stopped the way Ctrl-C stops them in a terminal.
        p = self.proc
        if self.line.exit_given:
            try:
                rc = p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)
                return "%s: did not end within 120 s\n%s" % (self.where, "".join(self.seen)[-3000:])
            if rc != self.line.exit:
                return "%s: exited %d, the page says %d\n%s" % (self.where, rc, self.line.exit,
                                                                 "".join(self.seen)[-3000:])
            if "Traceback" in "".join(self.seen):
                return "%s: %s" % (self.where, "".join(self.seen)[-3000:])
            return None
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)
        return None


def _end(procs):
    # last started first: the monitor before the board it watches
    failures = [f for f in (b.end() for b in reversed(procs)) if f]
    procs.clear()
    return failures


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_blocks(), ids=lambda p: p.name)
def test_every_block_runs_and_exits_as_documented(page, tmp_path):
    runtime = tempfile.mkdtemp(prefix="sp-readme-")    # short: Unix socket paths have a length limit
    env = dict(os.environ, PATH="%s%s%s" % (VENV_BIN, os.pathsep, os.environ.get("PATH", "")),
               XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    for name in ("SUREPICK_PROGRESS", "SUREPICK_PORT", "SUREPICK_HUB"):
        env.pop(name, None)
    work = tmp_path / "work"
    work.mkdir()
    port = _free_port()
    subst = _substitutions(work, port)
    ran = 0
    kept, failures = [], []
    try:
        for block in blocks(path=page):
            background = []
            if kept and block and block[0].section != kept[0].line.section:
                failures += _end(kept)
                assert not failures, failures
            try:
                for line in block:
                    if line.skip:
                        continue
                    where = "%s line %d" % (page.name, line.lineno)
                    argv = line.argv(subst)
                    if line.background:
                        (kept if line.keep else background).append(Background(line, argv, env, work))
                        continue
                    argv, into = _redirect(argv)
                    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, timeout=1500)
                    if into is not None:
                        (work / into).write_text(r.stdout)
                    assert r.returncode == line.exit, "%s: `%s` exited %d, the page says %d\n%s\n%s%s" % (
                        where, " ".join(argv), r.returncode, line.exit, r.stdout[-3000:], r.stderr[-3000:],
                        "".join("\n-- meanwhile %s printed:\n%s" % (b.where, "".join(b.seen)[-1500:])
                                for b in kept + background))
                    assert "Traceback" not in r.stderr, (where, r.stderr)
                    ran += 1
            finally:
                failures += _end(background)
            assert not failures, failures
    finally:
        failures += _end(kept)
        shutil.rmtree(runtime, ignore_errors=True)
    assert not failures, failures
    runnable = sum(1 for block in blocks(path=page) for line in block if not line.skip and not line.background)
    assert ran == runnable, (ran, runnable)
    for made in LEAVES.get(page.name, []):
        assert (work / made).exists(), "%s: its blocks did not leave %s" % (page.name, made)
