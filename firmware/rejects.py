# What the board refused to use from its flash at boot, and why: a bounded list of
# (file, key, reason) tokens that the link carries as they are (HELLO, STATUS, REJECTS in
# docs/protocol.md). Whatever the flash holds the board boots; this list is how it says what it
# ignored. Filled while booting (allocation is fine there), read by request handlers.
#
#   file    "config", "rest", "job", "log", "arm"
#   key     the JSON key (or segment name) concerned, "-" for the whole file
#   reason  a short code: see REASONS
from ..shared_fsm.compat import const

CAPACITY = const(12)      # items kept; `count` goes on counting past it
_MAX_TOKEN = const(24)    # link.MAX_TOKEN_LEN
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

# Every reason the firmware gives (docs/protocol.md explains each one).
REASONS = ("too_big", "utf8", "json", "no_memory", "not_object", "version", "is_dir", "not_dir",
           "unreadable", "unknown", "type", "range", "relation", "shape", "disabled", "invalid",
           "moved", "differs")


def token(text):
    # Any string -> a valid link token: other characters become "_", at most 24 of them, never
    # empty and never integer-looking (a JSON key can be anything, even "12" or "").
    if not isinstance(text, str):
        text = "-"
    out = []
    for c in text[:_MAX_TOKEN]:
        out.append(c if c in _TOKEN_CHARS else "_")
    t = "".join(out)
    if not t:
        return "-"
    digits = t[1:] if t[0] == "-" else t
    if digits and digits.isdigit():
        t = ("_" + t)[:_MAX_TOKEN]
    return t


class Rejects:
    def __init__(self):
        self.items = []     # (file, key, reason), oldest first, at most CAPACITY
        self.count = 0      # every rejection, also those not kept

    def add(self, file, key, reason):
        self.count += 1
        if len(self.items) < CAPACITY:
            self.items.append((file, token(key), reason))

    def __len__(self):
        return self.count
