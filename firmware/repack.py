# Copies of long-lived values made after a collection, so that they sit together in the heap.
#
# Why: MicroPython's collector never moves an object, and its allocator is first-fit from the
# bottom of the heap. Values built among a lot of garbage (a JSON parse, a validation: floats
# are heap objects on the board) end up strewn over the free heap, and once the
# garbage is collected the holes between them are all that is left of the block they were built
# in. Copied after the collection, they fill the lowest holes that fit, and the originals go back
# in one piece (docs/rp2040.md, heap on the chip). Boot only: a copy allocates.

def copy(v, memo):
    # A fresh copy of v: dicts, lists and tuples all the way down, and floats and strings
    # (an interned string comes back as itself; small ints are not objects). One copy per
    # original (memo, by id, {} to start): values shared between fields stay shared, rather than
    # costing heap twice.
    c = memo.get(id(v))
    if c is not None:
        return c
    if isinstance(v, dict):
        c = {copy(k, memo): copy(x, memo) for k, x in v.items()}
    elif isinstance(v, list):
        c = [copy(x, memo) for x in v]
    elif isinstance(v, tuple):
        c = tuple([copy(x, memo) for x in v])
    elif isinstance(v, float):
        c = v + 0.0
    elif isinstance(v, str):
        c = v.encode().decode()
    else:
        return v
    memo[id(v)] = c
    return c


def instance(obj):
    # A copy of an instance whose attributes are such values (the instance and its attribute
    # table too, which grew among the same garbage).
    new = object.__new__(type(obj))
    memo = {}
    for k, v in obj.__dict__.items():
        setattr(new, k, copy(v, memo))
    return new
