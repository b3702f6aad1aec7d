# What a Pico keeps outside its filesystem, kept beside the virtual board's flash: the 8-byte
# unique id of its flash chip (machine.unique_id(), the firmware's board id). It lives in the flash
# directory as `.vboard-chip` (JSON), which the board itself cannot see (vboard_fs hides names
# starting with ".vboard-"), so `rm -r :/` keeps it, as erasing a Pico's files keeps its id.
# One flash directory is one board: the same id across seeds, scenarios and restarts; a new
# directory is a new board. Copy the directory and you have cloned the board, id and all.
import json
import os
import secrets
from pathlib import Path

CHIP_FILE = ".vboard-chip"
_PREFIX = b"VB"            # 0x5642: virtual boards stand out among real Picos in a database


def unique_id(flash_dir):
    """-> the board's unique id as 16 hex digits, created (randomly) on first use."""
    path = Path(flash_dir) / CHIP_FILE
    try:
        uid = json.loads(path.read_text())["unique_id"]
        if len(uid) == 16 and int(uid, 16) >= 0:
            return uid.lower()
    except FileNotFoundError:
        pass
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError("%s is damaged (%s); it holds this board's id: restore it, or delete it "
                         "to make this flash a new board" % (path, e)) from None
    uid = (_PREFIX + secrets.token_bytes(6)).hex()
    tmp = path.with_name(CHIP_FILE + ".tmp")
    tmp.write_text(json.dumps({"unique_id": uid}) + "\n")
    os.replace(tmp, path)
    return uid
