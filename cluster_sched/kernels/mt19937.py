"""CPython's Mersenne Twister inside compiled code: ``random.Random.randrange(n)`` drawn
in a kernel, from and back to the scheduler's own ``random.Random``.

Host selection draws ``rng.randrange(len(ties))`` whenever several nodes share the best
score; a kernel that selects hosts for a whole batch of pods must draw the same numbers
in the same order. CPython's generator is MT19937 (``genrand_uint32``); ``getrandbits(k)``
for k <= 32 is one output shifted right by 32 - k, and ``randrange(n)`` (3.11,
``_randbelow_with_getrandbits``) draws ``getrandbits(n.bit_length())`` until the value is
below n. ``state_of`` / ``restore`` move the generator's 624 words and position between
the ``random.Random`` and the arrays the kernel advances.
"""

from __future__ import annotations

import random

import numpy as np
from numba import njit

__all__ = ["MAX_DRAW", "randbelow", "restore", "state_of"]

_N = 624
_M = 397
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)
#: randbelow's bound (exclusive): one 32-bit output per try
MAX_DRAW = 2**32

_JIT = njit(cache=True, nogil=True)


@_JIT
def _twist(mt):  # type: ignore[no-untyped-def]
    for kk in range(_N):
        y = (mt[kk] & _UPPER) | (mt[(kk + 1) % _N] & _LOWER)
        v = mt[(kk + _M) % _N] ^ (y >> np.uint32(1))
        if y & np.uint32(1):
            v ^= _MATRIX_A
        mt[kk] = v


@_JIT
def _genrand(mt, pos):  # type: ignore[no-untyped-def]
    """The next 32-bit output; ``pos`` int64[1] is the generator's index (624: twist)."""
    if pos[0] >= _N:
        _twist(mt)
        pos[0] = 0
    y = mt[pos[0]]
    pos[0] += 1
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    y ^= y >> np.uint32(18)
    return y


@_JIT
def randbelow(mt, pos, n):  # type: ignore[no-untyped-def]
    """``random.Random.randrange(n)`` for 1 < n < 2**32, advancing (mt, pos)."""
    k = 0
    while (np.int64(1) << k) <= n:  # n.bit_length()
        k += 1
    shift = np.uint32(32 - k)
    while True:
        r = np.int64(_genrand(mt, pos) >> shift)
        if r < n:
            return r


def state_of(rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """The generator's words uint32[624] and position int64[1], copied out of ``rng``."""
    _version, internal, _gauss = rng.getstate()
    mt = np.asarray(internal[:_N], dtype=np.uint32)
    return mt, np.asarray([internal[_N]], dtype=np.int64)


def restore(rng: random.Random, mt: np.ndarray, pos: np.ndarray) -> None:
    """Put the advanced words and position back into ``rng`` (its gauss_next kept)."""
    version, _internal, gauss = rng.getstate()
    rng.setstate((version, (*mt.tolist(), int(pos[0])), gauss))
