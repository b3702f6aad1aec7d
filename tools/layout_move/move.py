#!/usr/bin/env python3
"""The card's top-level layout (issue 27, item 1), not yet applied: its mechanical part.

    bash tools/layout_move/apply.sh      at the repository's root, on a clean tree

moves surepick/{firmware,shared_fsm,sim,host} to the top level, the other packages and loose
modules under host/, bench/ to tools/bench/, tests/{arms,cli,engines,records,teleop,vboard} under
tests/host/, and rewrites imports and paths; apply.sh then applies manual.patch (pyproject's
package-dir, host/source_tree.py's import_root, the layer check, tools/mpy_sources.py, the tests
that name paths). A full suite on the result (at 5cc9857) collected 1,719 tests. This folder goes
once the move lands. Idempotent.
"""
import re, subprocess, sys
from pathlib import Path

ROOT = Path.cwd()
UNDER_HOST = ("arms", "vboard", "engines", "teleop", "records", "cli")
TOP = ("firmware", "shared_fsm", "sim", "host")

def git(*a):
    subprocess.run(["git", *a], check=True)

def move():
    s = ROOT / "surepick"
    if not s.exists():
        s = None
    for t in TOP if s else ():
        if (s / t).exists():
            git("mv", f"surepick/{t}", t)
    for p in UNDER_HOST if s else ():
        if (s / p).exists():
            git("mv", f"surepick/{p}", f"host/{p}")
    if s and (s / "source_tree.py").exists():
        git("mv", "surepick/source_tree.py", "host/source_tree.py")
    if (ROOT / "bench").exists():
        git("mv", "bench", "tools/bench")
    for p in UNDER_HOST:                     # tests mirror the code folders
        if (ROOT / "tests" / p).exists():
            if (ROOT / "tests" / "host" / p).exists():
                for f in sorted((ROOT / "tests" / p).rglob("*")):
                    if f.is_file() and "__pycache__" not in f.parts:
                        dst = ROOT / "tests" / "host" / p / f.relative_to(ROOT / "tests" / p)
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        git("mv", str(f.relative_to(ROOT)), str(dst.relative_to(ROOT)))
            else:
                git("mv", f"tests/{p}", f"tests/host/{p}")
    # leftover files (new ones a branch added at surepick/X.py): to host/
    for f in sorted(s.iterdir()) if s else ():
        if f.name == "__init__.py" or f.name == "__pycache__":
            continue
        git("mv", f"surepick/{f.name}", f"host/{f.name}")

IMP = re.compile(r"\bsurepick\.(%s)\b" % "|".join(UNDER_HOST + ("source_tree",)))
PTH_HOST = re.compile(r"(?<![\w/.-])surepick/(%s)(?=[/\s`'\")\]:,.]|$)" % "|".join(UNDER_HOST))
PTH_ST = re.compile(r"(?<![\w/.-])surepick/source_tree\.py")
PTH_TOP = re.compile(r"(?<![\w/.-])surepick/(%s)(?=[/\s`'\")\]:,.]|$)" % "|".join(TOP))
PTH_BENCH = re.compile(r"(?<![\w/.-])bench/(?=[\w.])")
TIMP = re.compile(r"\btests\.(%s)\b" % "|".join(UNDER_HOST))
TPTH = re.compile(r"(?<![\w/.-])tests/(%s)(?=[/\s`'\")\]:,.]|$)" % "|".join(UNDER_HOST))
VERS = re.compile(r"from surepick import __version__")
# `from surepick import X` for a module that moved under host/ (the folders above and the loose
# modules: source_tree, and whatever .py files sat directly in surepick/)


def rewrite():
    loose = [p.stem for p in (ROOT / "host").glob("*.py") if p.stem != "__init__"]
    FROMIMP = re.compile(r"from surepick import (%s)\b" % "|".join(UNDER_HOST + ("source_tree",) + tuple(loose)))
    DOTTED_LOOSE = re.compile(r"\bsurepick\.(%s)\b" % "|".join(loose)) if loose else None
    PTH_LOOSE = re.compile(r"(?<![\w/.-])surepick/(%s)\.py" % "|".join(loose)) if loose else None
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    n = 0
    for f in files:
        p = ROOT / f
        if f == "CHANGELOG.md":
            continue
        if p.suffix not in (".py", ".md", ".sh", ".toml", ".mjs", ".txt", ".cfg", ".ini", ".json") and p.name != "run":
            continue
        if not p.is_file():
            continue
        try:
            t = p.read_text()
        except UnicodeDecodeError:
            continue
        o = t
        t = IMP.sub(lambda m: "surepick.host." + m.group(1), t)
        t = PTH_ST.sub("host/source_tree.py", t)
        t = PTH_HOST.sub(lambda m: "host/" + m.group(1), t)
        t = PTH_TOP.sub(lambda m: m.group(1), t)
        if f != "CHANGELOG.md":
            t = PTH_BENCH.sub("tools/bench/", t)
        t = TIMP.sub(lambda m: "tests.host." + m.group(1), t)
        t = TPTH.sub(lambda m: "tests/host/" + m.group(1), t)
        t = VERS.sub("from surepick.host import __version__", t)
        t = FROMIMP.sub(lambda m: "from surepick.host import " + m.group(1), t)
        if DOTTED_LOOSE is not None:
            t = DOTTED_LOOSE.sub(lambda m: "surepick.host." + m.group(1), t)
            t = PTH_LOOSE.sub(lambda m: "host/%s.py" % m.group(1), t)
        if t != o:
            p.write_text(t)
            n += 1
    print("rewrote", n, "files")

if __name__ == "__main__":
    move()
    rewrite()
