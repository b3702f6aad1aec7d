# os.rename on the virtual board behaves as on a Pico: the flash directory is mounted as '/'
# by boot_shim.py through vboard_fs.Flash, which works around the unix port's VfsPosix rename
# (both host paths built in one shared buffer, so a rooted rename with absolute paths lost the
# old path). Checked with real `mpremote` processes against the real `micropython` binary.
# mpremote 1.29 has no `fs mv`: a rename from the host is `mpremote exec "os.rename(...)"`.
import subprocess
import sys
from pathlib import Path

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

pytestmark = NEEDS_MICROPYTHON


def mpremote(board, *args, timeout=30):
    p = subprocess.run([MPREMOTE, "connect", board.address, "resume", *args], capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout.strip()


def test_rename_with_absolute_and_relative_paths(board):
    flash = board.flash_dir
    (flash / "a.txt").write_text("A")
    (flash / "old.txt").write_text("OLD")
    (flash / "d").mkdir()
    (flash / "d" / "x.txt").write_text("X")
    out = mpremote(board, "exec", "\n".join([
        "import os",
        "os.rename('/a.txt', '/b.txt')",            # absolute, root
        "os.rename('/b.txt', '/old.txt')",          # over an existing file (littlefs replaces it)
        "os.rename('/d/x.txt', '/y.txt')",          # out of a folder
        "os.chdir('/d')",
        "open('r.txt', 'w').write('R')",
        "os.rename('r.txt', '../s.txt')",           # relative to the cwd, up one level
        "os.rename('/s.txt', 't.txt')",             # absolute -> relative (lands in /d)
        "os.chdir('/')",
        "print(sorted(os.listdir('/')), sorted(os.listdir('/d')), "
        "open('/old.txt').read())",
    ]))
    assert out == "['d', 'old.txt', 'y.txt'] ['t.txt'] A", out
    assert (flash / "old.txt").read_text() == "A"
    assert (flash / "y.txt").read_text() == "X"
    assert (flash / "d" / "t.txt").read_text() == "R"
    assert not (flash / "a.txt").exists() and not (flash / "b.txt").exists()
    assert not (flash / "s.txt").exists() and not (flash / "d" / "x.txt").exists()


def test_rename_errors_and_the_flash_root_is_a_boundary(board):
    flash = board.flash_dir
    (flash / "keep.txt").write_text("K")
    out = mpremote(board, "exec", "\n".join([
        "import os",
        "try:",
        "    os.rename('/missing.txt', '/z.txt')",
        "    print('no error')",
        "except OSError as e:",
        "    print('OSError', e.args[0])",
        "os.rename('/../../keep.txt', '/kept.txt')",   # '..' stops at the flash root
        "print(sorted(os.listdir('/')))",
    ]))
    lines = out.splitlines()
    assert lines[0] == "OSError 2", out               # ENOENT, as on a Pico
    assert "kept.txt" in lines[1] and "keep.txt" not in lines[1], out
    assert (flash / "kept.txt").read_text() == "K"
    assert not (flash.parent / "z.txt").exists()


def test_mpremote_file_ops_still_work_after_the_fix(board, tmp_path):
    # cp / cat / ls / rm / mkdir go through the same wrapper
    src = tmp_path / "src.txt"
    src.write_text("hello")
    mpremote(board, "fs", "mkdir", ":sub")
    mpremote(board, "fs", "cp", str(src), ":sub/h.txt")
    assert mpremote(board, "fs", "cat", ":sub/h.txt") == "hello"
    mpremote(board, "exec", "import os; os.rename('sub/h.txt', '/sub/i.txt')")
    assert "i.txt" in mpremote(board, "fs", "ls", ":sub")
    mpremote(board, "fs", "rm", ":sub/i.txt")
    mpremote(board, "fs", "rmdir", ":sub")
    assert not (board.flash_dir / "sub").exists()
