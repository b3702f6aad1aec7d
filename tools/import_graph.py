"""Print the imports that cross folders of the surepick package, and fail on one pointing up.

The folders are layers (README.md, layout and the layer rule): shared core <- firmware <- sim <- arms <- vboard <- host <-
engines <- teleop <- records <- cli. A module may import its own folder and the folders to its left;
an import from a folder to its right is an upward arrow and exits 1.

    python tools/import_graph.py            the cross-folder edges, with counts
    python tools/import_graph.py --modules  every module-to-module edge that crosses folders
    python tools/import_graph.py --root DIR another copy of the package (default: surepick's own)
"""
import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

from surepick.host.source_tree import PACKAGE

LAYERS = ("shared_fsm", "firmware", "sim", "arms", "vboard", "host", "engines", "teleop", "records", "cli")


def module_of(path, root=PACKAGE):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path, root=PACKAGE):
    # -> [(dotted target, line)] for every import of a surepick module in the file, relative
    # imports resolved against the file's package.
    mod = module_of(path, root)
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
    ap.add_argument("--root", type=Path, default=PACKAGE, help="the package folder to check (default %(default)s)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    edges = Counter()
    upward = []
    for path in sorted(root.rglob("*.py")):
        src = module_of(path, root)
        a = layer(src)
        if a is None:
            continue
        for target, line in imports_of(path, root):
            b = layer(target)
            if b is None or b == a:
                continue
            edges[(a, b) if not args.modules else (src, target)] += 1
            if LAYERS.index(b) > LAYERS.index(a):
                upward.append("%s:%d imports %s (%s -> %s points up)" % (
                    path.relative_to(root.parent), line, target, a, b))
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
