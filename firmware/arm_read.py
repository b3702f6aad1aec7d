# ARM_READ (docs/protocol.md): the board's /arm.json as it is on flash, a slice a request, in hex
# tokens (`surepick config diff --arm` compares it with a description field by field). Loaded for
# the request and dropped after (firmware/app.py): a heap the loop keeps free.
from binascii import hexlify

from ..shared_fsm import link
from . import arm_file


def answer(app, rid, offset):
    # At rest only: a flash read is no work for a tick.
    if app.busy():
        app._reply(rid, link.E_BUSY)
        return
    n = link.ARM_READ_BYTES
    try:
        f = open(app.root + arm_file.PATH, "rb")
    except OSError:
        app._reply(rid, link.E_STATE, ("no_arm_json",))   # the reference arm
        return
    try:
        size = f.seek(0, 2)
        f.seek(offset)
        b = f.read(n * link.ARM_READ_TOKENS)
    finally:
        f.close()
    out = [size]
    for i in range(0, len(b), n):
        out.append("x" + hexlify(b[i:i + n]).decode())
    app._reply(rid, link.OK, tuple(out))
