# The virtual board's flash looks like a freshly flashed Pico's littlefs: the root lists only what
# was copied there, sizes are real, `df` shows 352 blocks of 4 KiB, a write past the end fails with
# ENOSPC. The expected figures were measured on the real thing: MicroPython 1.28 for RPI_PICO
# (/work/shared/rp2040/firmware.uf2) in the rp2040js emulator, through its raw REPL (the probe in
# /work/shared/rp2040/probe, `node rp2run.mjs --uf2 firmware.uf2 --run script.py`), 2026-12-01.
import re
import subprocess
import sys
from pathlib import Path

from surepick.host.vboard import vboard_fs

from tests.support.needs import NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

# Blocks each file took, written one by one into the root of an empty filesystem (statvfs before
# and after): (size in bytes, blocks).
PICO_FILE_BLOCKS = [(0, 0), (50, 0), (100, 0), (128, 0), (129, 0), (200, 0), (500, 0), (1000, 1),
                    (4000, 1), (4084, 1), (4096, 1), (4097, 2), (8000, 2), (8200, 3), (10000, 3),
                    (30000, 8), (100000, 25)]
PICO_EMPTY_FREE = 350          # of 352: the superblock pair
PICO_MKDIR_BLOCKS = 4          # os.mkdir('/d1')
PICO_40_SMALL_BLOCKS = 4       # then 40 files of 60 bytes, /d1/small00 .. small39
# The firmware as deploy compiled it then (30 .mpy files in 5 folders): 304 blocks free.
PICO_DEPLOY_TREE = {
    "lib": {"surepick": {
        "__init__.mpy": 60,
        "firmware": {"__init__.mpy": 44, "app.mpy": 11753, "boot_recovery.mpy": 3849,
                     "calibrate.mpy": 1218, "cmdparse.mpy": 1370, "flashlog.mpy": 3439,
                     "framewriter.mpy": 664, "fsutil.mpy": 305, "sensors.mpy": 1285,
                     "servo.mpy": 1395, "settings.mpy": 4768, "status_led.mpy": 339,
                     "telemetry.mpy": 1171,
                     "hal": {"__init__.mpy": 150, "hil.mpy": 878, "rp2040.mpy": 2100,
                             "virtual.mpy": 3238}},
        "shared_fsm": {"__init__.mpy": 46, "codes.mpy": 1616, "compat.mpy": 96, "config.mpy": 3086,
                       "events.mpy": 1017, "kinematics.mpy": 1601, "link.mpy": 5823,
                       "machine.mpy": 7335, "motion.mpy": 2192, "servo_cal.mpy": 629,
                       "states.mpy": 506, "ticks.mpy": 225}}}}
PICO_DEPLOY_FREE = 304
PICO_FULL_AT_CHUNK = 347       # writing 4096-byte chunks to one file: the 348th raised OSError 28


def model_blocks(tree, is_root=True):
    entries = []
    for name, v in tree.items():
        if isinstance(v, dict):
            entries.append((name, None, model_blocks(v, False)))
        else:
            entries.append((name, v, vboard_fs.file_blocks(v)))
    return vboard_fs.dir_blocks(is_root, entries)


# -- the block model against the Pico --------------------------------------------------------

def test_file_blocks_match_the_pico():
    assert [(size, vboard_fs.file_blocks(size)) for size, _ in PICO_FILE_BLOCKS] == PICO_FILE_BLOCKS


def test_capacity_is_the_largest_size_of_that_many_blocks():
    for blocks in range(0, 40):
        cap = vboard_fs.capacity(blocks)
        assert vboard_fs.file_blocks(cap) == blocks
        assert vboard_fs.file_blocks(cap + 1) == blocks + 1


def test_directory_costs_match_the_pico():
    assert vboard_fs.BLOCK_COUNT - model_blocks({}) == PICO_EMPTY_FREE
    assert model_blocks({"d1": {}}) - model_blocks({}) == PICO_MKDIR_BLOCKS
    smalls = {"small%02d" % i: 60 for i in range(40)}
    assert model_blocks({"d1": smalls}) - model_blocks({"d1": {}}) == PICO_40_SMALL_BLOCKS
    assert vboard_fs.BLOCK_COUNT - model_blocks(PICO_DEPLOY_TREE) == PICO_DEPLOY_FREE


# -- on the board, through mpremote ------------------------------------------------------------

def mpremote(board, *args, ok=True, timeout=60):
    p = subprocess.run([MPREMOTE, "connect", board.address, *args], capture_output=True,
                       text=True, timeout=timeout)
    if ok:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def exec_out(board, code):
    return mpremote(board, "exec", code).stdout.strip()


@NEEDS_MICROPYTHON
def test_fs_ls_shows_sizes_and_only_what_was_copied(board, tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(5000))
    small = tmp_path / "s.py"
    small.write_text("x = 1\n")
    mpremote(board, "fs", "cp", str(big), ":big.bin", "+", "fs", "cp", str(small), ":s.py",
             "+", "fs", "mkdir", ":lib")
    listing = mpremote(board, "fs", "ls").stdout
    assert re.search(r"^\s*5000 big\.bin$", listing, re.M), listing
    assert re.search(r"^\s*6 s\.py$", listing, re.M), listing
    assert re.search(r"^\s*0 lib/$", listing, re.M), listing
    assert exec_out(board, "import os\nprint(sorted(os.listdir('/')))") == "['big.bin', 'lib', 's.py']"
    # ilistdir's 4th field and os.stat as littlefs gives them
    out = exec_out(board, "import os\nprint(sorted(os.ilistdir('/')))\n"
                          "s = os.stat('/big.bin'); print(s[:7], s[7] == s[8] == s[9] > 0)\n"
                          "print(os.stat('/lib'))")
    assert out.splitlines() == [
        "[('big.bin', 32768, 0, 5000), ('lib', 16384, 0, 0), ('s.py', 32768, 0, 6)]",
        "(32768, 0, 0, 0, 0, 0, 5000) True",
        "(16384, 0, 0, 0, 0, 0, 0, 0, 0, 0)"]


@NEEDS_MICROPYTHON
def test_rm_r_root_empties_it_and_the_board_keeps_its_id(board, tmp_path):
    flash = board.flash_dir
    (flash / "main.py").write_text("pass\n")
    (flash / "lib").mkdir()
    (flash / "lib" / "m.py").write_text("pass\n")
    before = exec_out(board, "import machine\nprint(machine.unique_id().hex())")
    # mpremote removes everything, then os.rmdir('/'), which MicroPython's VFS refuses with
    # EPERM on a Pico too (measured on the emulated RPI_PICO): the same message, exit 1
    p = mpremote(board, "fs", "rm", "-r", ":/", ok=False)
    assert p.stderr.strip() == "mpremote: rm -r: cannot remove :/ Operation not permitted", p.stderr
    assert exec_out(board, "import os\nprint(os.listdir('/'))") == "[]"
    assert [p.name for p in flash.iterdir()] == [".vboard-chip"]     # the host keeps the id
    assert exec_out(board, "import machine\nprint(machine.unique_id().hex())") == before
    # the hidden file is not there for the board at all
    out = exec_out(board, "import os\nfor f in (lambda: os.stat('/.vboard-chip'), "
                          "lambda: open('/.vboard-chip'), lambda: os.remove('/.vboard-chip')):\n"
                          " try:\n  f(); print('reached')\n except OSError as e:\n  print(e.errno)")
    assert out.split() == ["2", "2", "2"]


@NEEDS_MICROPYTHON
def test_df_is_a_picos_flash_and_counts_what_it_holds(board, tmp_path):
    out = mpremote(board, "df").stdout
    # filesystem, size, used, avail: 352 blocks of 4 KiB, two of them the superblock pair
    row = [line.split() for line in out.splitlines() if line.rstrip().endswith(" /")]
    assert row and row[0][:4] == ["<VfsLfs2>", str(352 * 4096), str(2 * 4096), str(350 * 4096)], out
    # a 100,000-byte and a 4,097-byte file: 25 and 2 blocks on the Pico
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(bytes(100000))
    b.write_bytes(bytes(4097))
    mpremote(board, "fs", "cp", str(a), ":a.bin", "+", "fs", "cp", str(b), ":b.bin")
    assert exec_out(board, "import os\nprint(os.statvfs('/'))") == \
        "(4096, 4096, 352, %d, %d, 0, 0, 0, 0, 255)" % ((PICO_EMPTY_FREE - 27,) * 2)


@NEEDS_MICROPYTHON
def test_writing_past_the_end_of_the_flash_fails_with_enospc(board, tmp_path):
    out = exec_out(board, "\n".join([
        "import os",
        "k = -1",
        "try:",
        " with open('/big', 'wb') as f:",
        "  for k in range(400):",
        "   f.write(bytes(4096))",
        "except OSError as e:",
        " print('full', e.errno, k, os.statvfs('/')[3])",
        "with open('/x.txt', 'w') as f:",
        " f.write('still writable')",
        "print(open('/x.txt').read())",
    ]))
    full, room = out.splitlines()
    _, errno_, chunk, free = full.split()
    assert errno_ == "28"
    # littlefs needs a block or two the model does not (commits): within 3 chunks of the Pico
    assert abs(int(chunk) - PICO_FULL_AT_CHUNK) <= 3, out
    assert int(free) <= 1
    assert room == "still writable"
    # mpremote's copy of a file that does not fit is refused, and says why
    huge = tmp_path / "huge.bin"
    huge.write_bytes(bytes(64 * 1024))
    p = mpremote(board, "fs", "cp", str(huge), ":huge.bin", ok=False)
    assert p.returncode != 0 and "No space left on device" in p.stderr, (p.stdout, p.stderr)
