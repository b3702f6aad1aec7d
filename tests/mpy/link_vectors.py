# Encoding vectors for the link protocol, generated from a seed with the shared PRNG.
# Run by `micropython`: prints one line per vector, "<type> <hex of the frame or None>
# <decode result>", which tests/test_link_mpy.py compares with CPython's output of the same
# function. Usage: micropython tests/mpy/link_vectors.py SEED COUNT
import sys

from prng import Prng

_TOKEN_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_."
_TOKEN_REST = _TOKEN_FIRST + "0123456789-"


def token(rng, link):
    n = 1 + rng.below(link.MAX_TOKEN_LEN)
    return rng.choice(_TOKEN_FIRST) + "".join([rng.choice(_TOKEN_REST) for _ in range(n - 1)])


def value(rng, link, kind):
    if kind == link.K_TOK or (kind == link.K_ANY and rng.chance(1, 2)):
        return token(rng, link)
    if kind == link.K_ANY:
        kind = link.K_I32
    lo, hi = link.KIND_LO[kind], link.KIND_HI[kind]
    r = rng.below(8)
    if r == 0:
        return lo
    if r == 1:
        return hi
    if r == 2:
        return rng.between(max(lo, -9), min(hi, 9))
    return rng.between(lo, hi)


def fields_for(rng, link, ftype):
    _, least, kinds, _ = link.SCHEMA[ftype]
    n = rng.between(least, len(kinds))
    return tuple([value(rng, link, kinds[i]) for i in range(n)])


def bad_fields(rng, link, ftype):
    # one field out of range / of the wrong kind, or a wrong count: encode must refuse
    f = list(fields_for(rng, link, ftype))
    kinds = link.SCHEMA[ftype][2]
    i = rng.below(len(f))
    r = rng.below(3)
    if r == 0 and kinds[i] < link.K_TOK:
        f[i] = link.KIND_HI[kinds[i]] + 1 + rng.below(5)
    elif r == 1:
        f[i] = "1x" if kinds[i] < link.K_TOK else "-12"  # token where int due, int-looking token
        if kinds[i] == link.K_ANY:
            f[i] = "a b"
    else:
        f.extend([0] * (len(kinds) + 1 - len(f)))
    return tuple(f)


def vectors(link, seed, count):
    # -> list of (ftype, fields); about one in eight is invalid on purpose
    rng = Prng(seed)
    types = sorted(link.SCHEMA.keys())
    out = []
    for i in range(count):
        ftype = types[i % len(types)]
        if rng.chance(1, 8):
            out.append((ftype, bad_fields(rng, link, ftype)))
        else:
            out.append((ftype, fields_for(rng, link, ftype)))
    return out


def describe(link, ftype, fields):
    frame = link.encode(ftype, fields)
    if frame is None:
        return "%d None" % ftype
    err, t, got = link.decode(frame)
    shown = "|".join([str(v) for v in got]) if got is not None else "-"
    return "%d %s %d %d %s" % (ftype, "".join(["%02x" % b for b in frame]), err, t, shown)


def main():
    from surepick.shared_fsm import link
    link.load_run_frame()    # every frame, as a board has them once a RUN came (CPython: at import)
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    for ftype, fields in vectors(link, seed, count):
        print(describe(link, ftype, fields))


if __name__ == "__main__":
    main()
