"""Where surepick's own files are: the one module that knows (every other module asks it).

PACKAGE is the surepick package folder, installed or checked out: the firmware manifest's paths,
the data files beside the code (the arm's MJCF, the virtual board's shims, the emulator's node
scripts) and the sweep's code identity are relative to it. CHECKOUT is the repository around it
(docs/, bench/, tests/, tools/): only a source checkout has one, an installed wheel does not.
IMPORT_ROOT is the folder holding the package, for interpreters started on the sources (the
unix `micropython` runs of the benches and tests put it on their sys.path).

Host code only: the board finds its modules through its own sys.path.
"""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
IMPORT_ROOT = PACKAGE.parent        # the folder holding the package: what a MicroPython run puts on sys.path
CHECKOUT = PACKAGE.parent
DOCS = CHECKOUT / "docs"


def package_file(*parts):
    """A file shipped inside the package, e.g. package_file("firmware", "main.py")."""
    return PACKAGE.joinpath(*parts)


def main_checkout():
    """The checkout this one is a linked git worktree of (`git worktree add`), else CHECKOUT."""
    git = CHECKOUT / ".git"
    if git.is_file():
        for line in git.read_text().splitlines():
            if line.startswith("gitdir:"):
                # <main>/.git/worktrees/<name>
                gitdir = (CHECKOUT / line.split(":", 1)[1].strip()).resolve()
                return gitdir.parent.parent.parent
    return CHECKOUT


def is_checkout():
    """True when surepick runs from a source checkout (its docs/ beside the package)."""
    return DOCS.is_dir() and (CHECKOUT / "pyproject.toml").is_file()
