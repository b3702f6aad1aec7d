# xorshift32: the same sequence on MicroPython and CPython, so a seed names one test case on
# both interpreters (MicroPython's `random` differs from CPython's).


class Prng:
    def __init__(self, seed):
        self.s = (seed & 0xFFFFFFFF) or 0x9E3779B9
        for _ in range(4):
            self.next()

    def next(self):
        x = self.s
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.s = x
        return x

    def below(self, n):
        return self.next() % n

    def between(self, lo, hi):
        # inclusive; spans up to 2**32
        return lo + (((self.next() << 32) | self.next()) % (hi - lo + 1))

    def chance(self, num, den):
        return self.next() % den < num

    def choice(self, seq):
        return seq[self.next() % len(seq)]

    def raw(self, n):
        return bytes([self.next() & 0xFF for _ in range(n)])
