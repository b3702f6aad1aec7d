"""Print the imports that cross folders of surepick's code, and fail on one pointing up.

The folders are layers (README.md, layout and the layer rule): shared_fsm <- firmware <- sim <- host,
and inside host/: user_error (errors meant for the user, exit codes) <- source_tree (where the
files are), json_file and worker_limits (bounds on a user's input) <- arms <- vboard <- host's own
(link, deploy, monitor, ...) <- engines <- teleop <- records <- cli. A module may import its own
folder and the folders to its left; an import from a folder to its right is an upward arrow and
exits 1.

    python tools/import_graph.py            the cross-folder edges, with counts
    python tools/import_graph.py --modules  every module-to-module edge that crosses folders
    python tools/import_graph.py --root DIR another copy of the code folders (default: this checkout)
"""
import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

from surepick.host.source_tree import CODE_FOLDERS, PACKAGE

HOST_LAYERS = ("user_error", "source_tree", "json_file", "worker_limits", "arms", "vboard", "engines", "teleop", "records", "cli")
LAYERS = ("shared_fsm", "firmware", "sim", "host.user_error", "host.source_tree", "host.json_file", "host.worker_limits", "host.arms", "host.vboard", "host", "host.engines", "host.teleop",
          "host.records", "host.cli")


def module_of(path, root=PACKAGE):
    # firmware/app.py under root -> surepick.firmware.app (pyproject.toml's package-dir)
    parts = ["surepick"] + list(path.relative_to(root).with_suffix("").parts)
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
                # `from surepick.host import worker_limits` imports the module, not the package
                subs = [target + "." + a.name for a in node.names if _is_module(target + "." + a.name, root)]
                out += [(t, node.lineno) for t in subs or [target]]
    return out


def _is_module(dotted, root):
    rel = Path(*dotted.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def layer(dotted):
    parts = dotted.split(".")
    if len(parts) > 2 and parts[1] == "host" and parts[2] in HOST_LAYERS:
        return "host." + parts[2]
    return parts[1] if len(parts) > 1 and parts[1] in CODE_FOLDERS else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", action="store_true", help="list module-level edges, not folder counts")
    ap.add_argument("--root", type=Path, default=PACKAGE, help="the package folder to check (default %(default)s)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    edges = Counter()
    upward = []
    paths = sorted(p for f in CODE_FOLDERS if (root / f).is_dir() for p in (root / f).rglob("*.py")
                   if "node_modules" not in p.parts)
    for path in paths:
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
                    path.relative_to(root), line, target, a, b))
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
