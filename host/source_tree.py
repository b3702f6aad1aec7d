"""Where surepick's own files are: the one module that knows (every other module asks it).

PACKAGE is the folder the `surepick` namespace maps to: a source checkout's root (its firmware/,
shared_fsm/, sim/ and host/ folders are surepick.firmware, ... by pyproject.toml's package-dir)
or an installed wheel's site-packages/surepick. The firmware manifest's paths, the data files
beside the code (the virtual board's shims, the emulator's node scripts) and the sweep's code
identity are relative to it. CHECKOUT is the repository (docs/, tools/, tests/): only a source
checkout has one. CODE_FOLDERS are the folders that hold surepick's code.

Host code only: the board finds its modules through its own sys.path.
"""
import hashlib
import os
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
CHECKOUT = PACKAGE
DOCS = CHECKOUT / "docs"
CODE_FOLDERS = ("shared_fsm", "firmware", "sim", "host")


def import_root():
    """A folder holding `surepick/` with firmware/ and shared_fsm/ in it, as a board's /lib has
    them: what a unix `micropython` run on the sources puts on its sys.path. An installed wheel
    is already laid out so; a checkout gets a symlink named surepick to it, in the temp folder."""
    if PACKAGE.name == "surepick":
        return PACKAGE.parent
    key = hashlib.sha256(str(PACKAGE).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / ("surepick-import-root-" + key)
    link = root / "surepick"
    if not link.is_symlink() or Path(os.readlink(link)) != PACKAGE:
        root.mkdir(exist_ok=True)
        tmp = root / ("surepick.%d" % os.getpid())
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(PACKAGE, tmp)
        os.replace(tmp, link)       # atomic: a concurrent run sees the old link or the new
    return root


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
