# The virtual board's flash: a host directory mounted as the board's root filesystem, shaped like
# the littlefs2 filesystem of a freshly flashed RPI_PICO. Flash() runs INSIDE the virtual board's
# `micropython` (boot_shim.py mounts it at "/"); the block model above it is plain Python so
# CPython tests can check it too.
#
# What a Pico shows, and this mirrors (measured on MicroPython 1.28 RPI_PICO in rp2040js):
#   - os.ilistdir gives (name, type, 0, size); os.stat (mode, 0, 0, 0, 0, 0, size, t, t, t), a
#     directory's size and times 0.
#   - os.statvfs('/') is (4096, 4096, 352, free, free, 0, 0, 0, 0, 255): 352 blocks of 4 KiB.
#     Free blocks are estimated from what the directory holds (used_blocks below), and a write
#     that would need more than is free fails with OSError(ENOSPC) as littlefs does.
#   - the root lists only what was copied there: host files whose names start with ".vboard-"
#     (the board's chip identity, kept by the supervisor) are invisible to the board.

# One fix besides: the unix port's VfsPosix builds both host paths of a rename in one shared
# buffer, so with a root the old path is replaced by the new one and os.rename('/a', '/b') fails
# (ENOENT) or renames the wrong file. rename() resolves both paths itself and renames through a
# rootless VfsPosix.

import io

BLOCK_SIZE = 4096
BLOCK_COUNT = 352
NAME_MAX = 255
HIDDEN_PREFIX = ".vboard-"
# littlefs2 as MicroPython configures it on the rp2 port, fitted to what the emulated Pico
# reported (tests/host/vboard/test_vboard_flash.py holds the measurements):
INLINE_MAX = 512           # files up to this size live in their directory's metadata
ROOT_BLOCKS = 2            # the superblock / root metadata pair of an empty filesystem
DIR_BLOCKS = 4             # what os.mkdir of an empty directory took
ENTRY_BYTES = 16           # metadata per directory entry, besides its name and inline data
META_SPLIT = 1536          # each further this-many bytes of a directory's metadata: a new pair

_ENOENT = 2
_ENOSPC = 28
_S_IFDIR = 0x4000
_S_IFREG = 0x8000


def _ctz(n):
    c = 0
    while not n & 1:
        n >>= 1
        c += 1
    return c


def file_blocks(size):
    # Data blocks of a file: inline when small, else a CTZ skip-list (block i > 0 keeps
    # ctz(i) + 1 back-pointers of 4 bytes).
    if size <= INLINE_MAX:
        return 0
    n = 1
    room = BLOCK_SIZE
    while room < size:
        room += BLOCK_SIZE - 4 * (_ctz(n) + 1)
        n += 1
    return n


def capacity(blocks):
    # The largest file size that fits in `blocks` data blocks.
    if blocks == 0:
        return INLINE_MAX
    room = BLOCK_SIZE
    for i in range(1, blocks):
        room += BLOCK_SIZE - 4 * (_ctz(i) + 1)
    return room


def dir_blocks(is_root, entries):
    # entries: (name, size, blocks) for files, (name, None, blocks) for subdirectories
    # (blocks: what the subdirectory holds, itself included).
    total = ROOT_BLOCKS if is_root else DIR_BLOCKS
    meta = 0
    for name, size, blocks in entries:
        total += blocks
        meta += ENTRY_BYTES + len(name)
        if size is not None and blocks == 0:
            meta += size
    return total + 2 * (meta // META_SPLIT)


class Flash:
    def __init__(self, root):
        import os
        self._root = root.rstrip("/")
        self._v = os.VfsPosix(root)
        self._host = os.VfsPosix()

    # ---- paths ----

    def _parts(self, p):
        if not p.startswith("/"):
            p = self._v.getcwd().rstrip("/") + "/" + p
        parts = []
        for part in p.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part and part != ".":
                parts.append(part)
        return parts

    def _host_path(self, p):
        # Never above the flash root; a hidden name reads as absent.
        parts = self._parts(p)
        if parts and parts[0].startswith(HIDDEN_PREFIX):
            raise OSError(_ENOENT)
        return self._root + "/" + "/".join(parts)

    def _target(self, p):
        # -> (vfs, path) to operate on. Imports stat and open many paths: those without ".." or
        # the hidden prefix go straight to the rooted VfsPosix, making no garbage here (on a
        # heap the firmware nearly fills, the strings of the slow path fragmented it enough to
        # fail its boot); the rest are resolved, and checked, to a host path.
        if ".." in p or HIDDEN_PREFIX in p:
            return self._host, self._host_path(p)
        return self._v, p

    # ---- the block model over the host directory ----

    def _walk(self, host_dir, is_root):
        entries = []
        for e in self._host.ilistdir(host_dir):
            name = e[0]
            if is_root and name.startswith(HIDDEN_PREFIX):
                continue
            path = host_dir + "/" + name
            try:
                st = self._host.stat(path)
            except OSError:
                continue                       # vanished (or a dangling link)
            if st[0] & _S_IFDIR:
                entries.append((name, None, self._walk(path, False)))
            else:
                entries.append((name, st[6], file_blocks(st[6])))
        return dir_blocks(is_root, entries)

    def used_blocks(self):
        return self._walk(self._root, True)

    def free_blocks(self):
        free = BLOCK_COUNT - self.used_blocks()
        return free if free > 0 else 0

    def _reserve(self, blocks):
        if blocks > 0 and blocks > self.free_blocks():
            raise OSError(_ENOSPC)

    def __repr__(self):
        # What `mpremote df` prints for the filesystem: the Pico's, whose layout this models.
        return "<VfsLfs2>"

    # ---- the VFS protocol ----

    def mount(self, readonly, mkfs):
        self._v.mount(readonly, mkfs)

    def umount(self):
        self._v.umount()

    def open(self, p, mode):
        if not any(c in mode for c in "wax+"):
            vfs, path = self._target(p)
            return vfs.open(path, mode)
        hp = self._host_path(p)
        try:
            size = 0 if "w" in mode else self._host.stat(hp)[6]
        except OSError:
            size = 0
        return _Writer(self, self._v.open(p, mode), size)

    def ilistdir(self, p):
        hp = self._host_path(p)
        top = hp == self._root + "/"
        for e in self._v.ilistdir(p):
            name = e[0]
            if top and name.startswith(HIDDEN_PREFIX):
                continue
            st = self._host.stat(hp.rstrip("/") + "/" + name)
            if st[0] & _S_IFDIR:
                yield (name, _S_IFDIR, 0, 0)
            else:
                yield (name, _S_IFREG, 0, st[6])

    def stat(self, p):
        vfs, path = self._target(p)
        st = vfs.stat(path)
        if st[0] & _S_IFDIR:
            return (_S_IFDIR, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        t = st[8]
        return (_S_IFREG, 0, 0, 0, 0, 0, st[6], t, t, t)

    def statvfs(self, p):
        free = self.free_blocks()
        return (BLOCK_SIZE, BLOCK_SIZE, BLOCK_COUNT, free, free, 0, 0, 0, 0, NAME_MAX)

    def chdir(self, p):
        self._host_path(p)                # never above the root, never into a hidden name
        return self._v.chdir(p)

    def getcwd(self):
        return self._v.getcwd()

    def mkdir(self, p):
        vfs, path = self._target(p)
        self._reserve(DIR_BLOCKS)
        return vfs.mkdir(path)

    def remove(self, p):
        vfs, path = self._target(p)
        return vfs.remove(path)

    def rmdir(self, p):
        vfs, path = self._target(p)
        return vfs.rmdir(path)

    def rename(self, old, new):
        self._host.rename(self._host_path(old), self._host_path(new))


class _Writer(io.IOBase):
    # A file open for writing that asks the flash for blocks before it grows into them.
    def __init__(self, flash, f, size):
        self._flash = flash
        self._f = f
        self._blocks = file_blocks(size)
        self._cap = capacity(self._blocks)

    def write(self, b):
        n = len(b.encode()) if isinstance(b, str) else len(b)
        end = self._f.tell() + n
        if end > self._cap:
            need = file_blocks(end)
            self._flash._reserve(need - self._blocks)
            self._blocks = need
            self._cap = capacity(need)
        return self._f.write(b)

    def read(self, *a):
        return self._f.read(*a)

    def readinto(self, *a):
        return self._f.readinto(*a)

    def readline(self, *a):
        return self._f.readline(*a)

    def readlines(self):
        return self._f.readlines()

    def seek(self, *a):
        return self._f.seek(*a)

    def tell(self):
        return self._f.tell()

    def flush(self):
        return self._f.flush()

    def close(self):
        return self._f.close()

    def ioctl(self, req, arg):
        # The stream protocol's flush (1) and close (4); nothing else is asked of a file.
        if req == 1:
            self._f.flush()
        elif req == 4:
            self._f.close()
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def __iter__(self):
        return self

    def __next__(self):
        line = self._f.readline()
        if not line:
            raise StopIteration
        return line
