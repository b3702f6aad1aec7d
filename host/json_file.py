# A small JSON object file a user hands a command (config overrides, plant parameters,
# tolerances), read within bounds: at most MAX_BYTES, UTF-8, nesting Python can parse, no NaN or
# Infinity (not JSON) nor a number that is infinite as a float (1e999), numbers of at most
# Python's 4,300 digits. Every way it can be wrong is one JsonFileError line naming the file; its
# caller adds what the file is and checks its fields.
import json
import math

from surepick.host.user_error import BadInput

MAX_BYTES = 1 << 20        # such a file is a few KB: a bigger one is not one


class JsonFileError(BadInput, ValueError):
    """The file cannot be read as one JSON object: the message names it and says why."""


def _no_constant(name):
    raise ValueError("%s is not a JSON number" % name)


def _finite(text):
    # A number literal too large for a float (1e999) would read as infinity: NaN's twin, refused too.
    v = float(text)
    if math.isinf(v):
        raise ValueError("%s is too large a number (infinite as a float)" % text[:40])
    return v


def load_object(path, what):
    # -> the JSON object in `path` (a dict). `what` names the file: "config file", "plant file".
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise JsonFileError("cannot read the %s %s: %s" % (what, path, e.strerror or e)) from None
    if len(data) > MAX_BYTES:
        raise JsonFileError("%s %s is larger than %d bytes: not one" % (what, path, MAX_BYTES))
    try:
        d = json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError as e:
        raise JsonFileError("%s %s is not UTF-8 text (byte 0x%02x at offset %d)"
                            % (what, path, data[e.start], e.start)) from None
    except RecursionError:
        raise JsonFileError("%s %s nests too deep to be one" % (what, path)) from None
    except ValueError as e:             # JSONDecodeError, NaN, a number past 4,300 digits
        raise JsonFileError("%s %s is not valid JSON: %s" % (what, path, str(e).split(";")[0])) from None
    if not isinstance(d, dict):
        raise JsonFileError("%s %s must hold a JSON object" % (what, path))
    return d
