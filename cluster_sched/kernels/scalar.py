"""Scalar arithmetic of the compiled passes (``kernels.fused``), numpy's semantics exact.

Every helper is inlined into the passes that call it (``inline="always"``: a call between
compiled functions is not inlined by LLVM and costs more than the arithmetic it wraps).

numba's on-disk cache notices edits to a kernel's own file only, and these helpers are
compiled into ``fused``'s kernels: ``fused.SCALAR_DIGEST`` holds this file's sha256, so
an edit here must edit ``fused`` too (which invalidates its cache);
tests/kernels/test_scalar_digest.py fails until it does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Fit scoring strategies (``mode``)
LEAST_ALLOCATED = 0
MOST_ALLOCATED = 1
REQUESTED_TO_CAPACITY_RATIO = 2

MAX_NODE_SCORE = np.int64(100)
INT64_MIN = np.iinfo(np.int64).min
_FLOAT_EXACT_DIVIDEND = np.int64(2**53)

SCALAR = njit(cache=True, nogil=True, error_model="numpy", inline="always")


# numba marks int64 + - * "no signed wrap" (LLVM then assumes overflow cannot happen);
# numpy wraps. Sums and products that can overflow use uint64 (modular) arithmetic here.
@SCALAR
def wrap_add(a, b):
    return np.int64(np.uint64(a) + np.uint64(b))


@SCALAR
def wrap_sub(a, b):
    return np.int64(np.uint64(a) - np.uint64(b))


@SCALAR
def wrap_mul(a, b):
    return np.int64(np.uint64(a) * np.uint64(b))


@SCALAR
def to_int(x):
    """float64 -> int64 truncating, as numpy's astype on x86-64: out of range (or NaN)
    gives int64 min. numba's plain cast leaves that undefined."""
    if not (-9.223372036854775808e18 <= x < 9.223372036854775808e18):
        return INT64_MIN
    return np.int64(x)


@SCALAR
def floordiv(a, b):
    """a // b. For 0 <= a < 2**53 and b > 0, float64 division floors exactly (its
    rounding error, under a/b * 2**-53, stays below the 1/b gap to the next integer) and
    is several times faster than a 64-bit integer division."""
    if 0 <= a < _FLOAT_EXACT_DIVIDEND and b > 0:
        return np.int64(np.floor(np.float64(a) / np.float64(b)))
    return a // b


@SCALAR
def div_trunc(a, b):
    """plugins._helpers.div_trunc, np.abs wrap-around of int64 min included."""
    qa = wrap_sub(0, a) if a < 0 else a
    qb = wrap_sub(0, b) if b < 0 else b
    q = qa // qb
    return wrap_sub(0, q) if (a < 0) != (b < 0) else q


@SCALAR
def product(mode, a, r):
    """Least/MostAllocated's fast-path dividend: max(a - r, 0) * 100 or min(r, a) * 100."""
    if mode == LEAST_ALLOCATED:
        x = wrap_sub(a, r)
        if x < 0:
            x = np.int64(0)
    else:
        x = r if r < a else a
    return wrap_mul(x, MAX_NODE_SCORE)


@SCALAR
def slow_per(mode, a, r):
    """scorers' masked path, for a > 0."""
    if mode == LEAST_ALLOCATED:
        return floordiv(wrap_mul(wrap_sub(a, r), MAX_NODE_SCORE), a) if r <= a else np.int64(0)
    return floordiv(wrap_mul(r if r < a else a, MAX_NODE_SCORE), a)


@SCALAR
def balanced_pair(a0, a1, u0, u1):
    """One node's BalancedAllocation score over two resources, branch-free (so that the
    loops calling it vectorise): std = |f0 - f1| / 2 when both allocatable are > 0, else
    0 (one or no fraction); the quotients are computed either way and then dropped."""
    f0 = min(np.float64(u0) / np.float64(a0), 1.0)
    f1 = min(np.float64(u1) / np.float64(a1), 1.0)
    std = abs((f0 - f1) / 2) if (a0 > 0) & (a1 > 0) else 0.0
    return to_int((1 - std) * 100.0)
