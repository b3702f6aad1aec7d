"""Print the imports that cross folders of the surepick package, and fail on one pointing up.

The folders are layers (README, Layout): shared core <- firmware <- sim <- vboard <- host <-
engines <- teleop <- records <- cli. A module may import its own folder and the folders to its left;
an import from a folder to its right is an upward arrow and exits 1.

    python tools/import_graph.py            the cross-folder edges, with counts
    python tools/import_graph.py --modules  every module-to-module edge that crosses folders
"""
import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

LAYERS = ("shared_fsm", "firmware", "sim", "vboard", "host", "engines", "teleop", "records", "cli")
ROOT = Path(__file__).resolve().parent.parent / "surepick"


def module_of(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path):
    # -> [(dotted target, line)] for every import of a surepick module in the file, relative
    # imports resolved against the file's package.
    mod = module_of(path)
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("surepick")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("surepick"):
                out.append((target, node.lineno))
    return out


def layer(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", action="store_true", help="list module-level edges, not folder counts")
    args = ap.parse_args(argv)
    edges = Counter()
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        src = module_of(path)
        a = layer(src)
        if a is None:
            continue
        for target, line in imports_of(path):
            b = layer(target)
            if b is None or b == a:
                continue
            edges[(a, b) if not args.modules else (src, target)] += 1
            if LAYERS.index(b) > LAYERS.index(a):
                upward.append("%s:%d imports %s (%s -> %s points up)" % (
                    path.relative_to(ROOT.parent), line, target, a, b))
    for (a, b), n in sorted(edges.items()):
        print("%-40s -> %-40s %3d" % (a, b, n))
    if upward:
        print("\n%d upward import(s):" % len(upward), file=sys.stderr)
        for u in upward:
            print("  " + u, file=sys.stderr)
        return 1
    print("\nno upward imports (layers: %s)" % " <- ".join(LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
