"""The compiled passes: Filter, Score and the best-score tie set of one pod (or a batch).

Plain arrays in (``kernels.evaluate`` packs them). The arithmetic transcribes the numpy
plugins (``plugins/noderesources``) operation by operation, int64 wrap-around and float64
rounding included, so both agree bit for bit on every input the plugins accept
(``tests/kernels``). Where the numpy scorers take a whole-window fast path
(``alloc.min() > 0``; float64 division below 2**46) the same path is taken: they only
differ once int64 products wrap, and then the reference is what the plugins do.

Per-node work is inline in each pass's loop, calling scalar helpers only: a per-node call
taking arrays keeps numba's atomic reference counting on them, ten times the arithmetic.
One file on purpose: numba's on-disk cache only notices edits to the caller's own file.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Fit scoring strategies (``mode``)
LEAST_ALLOCATED = 0
MOST_ALLOCATED = 1
REQUESTED_TO_CAPACITY_RATIO = 2
#: Where a score resource's "used" amount comes from (``s_srcs``): requested[col], or
#: the non-zero cpu / memory accounting (NodeResourcesFit scores cpu/memory that way).
SRC_REQUESTED = 0
SRC_NONZERO_CPU = 1
SRC_NONZERO_MEMORY = 2
#: ``status``: a plugin's score left [0, 100]; the caller re-runs the numpy path, which
#: raises the framework's error with the plugin's name (it needs int64 overflow to happen).
STATUS_OK = 0
STATUS_INVALID_SCORE = 1

_MAX_NODE_SCORE = np.int64(100)
_EXACT_FLOAT_LIMIT = np.int64(2**46)  # scorers.EXACT_FLOAT_LIMIT
_FLOAT_EXACT_DIVIDEND = np.int64(2**53)
_TIGHT = 4  # resource checks _filter_tight unrolls
_INT64_MIN = np.iinfo(np.int64).min

_JIT = njit(cache=True, nogil=True, error_model="numpy")
#: scalar helpers: inlined by numba (a call between compiled functions is not inlined by
#: LLVM and costs more than the arithmetic it wraps)
_SCALAR = njit(cache=True, nogil=True, error_model="numpy", inline="always")


# numba marks int64 + - * "no signed wrap" (LLVM then assumes overflow cannot happen);
# numpy wraps. Sums and products that can overflow use uint64 (modular) arithmetic here.
@_SCALAR
def _add(a, b):
    return np.int64(np.uint64(a) + np.uint64(b))


@_SCALAR
def _sub(a, b):
    return np.int64(np.uint64(a) - np.uint64(b))


@_SCALAR
def _mul(a, b):
    return np.int64(np.uint64(a) * np.uint64(b))


@_SCALAR
def _to_int(x):
    """float64 -> int64 truncating, as numpy's astype on x86-64: out of range (or NaN)
    gives int64 min. numba's plain cast leaves that undefined."""
    if not (-9.223372036854775808e18 <= x < 9.223372036854775808e18):
        return _INT64_MIN
    return np.int64(x)


@_SCALAR
def _floordiv(a, b):
    """a // b. For 0 <= a < 2**53 and b > 0, float64 division floors exactly (its
    rounding error, under a/b * 2**-53, stays below the 1/b gap to the next integer) and
    is several times faster than a 64-bit integer division."""
    if 0 <= a < _FLOAT_EXACT_DIVIDEND and b > 0:
        return np.int64(np.floor(np.float64(a) / np.float64(b)))
    return a // b


@_SCALAR
def _div_trunc(a, b):
    """plugins._helpers.div_trunc, np.abs wrap-around of int64 min included."""
    qa = _sub(0, a) if a < 0 else a
    qb = _sub(0, b) if b < 0 else b
    q = qa // qb
    return _sub(0, q) if (a < 0) != (b < 0) else q


@_SCALAR
def _product(mode, a, r):
    """Least/MostAllocated's fast-path dividend: max(a - r, 0) * 100 or min(r, a) * 100."""
    if mode == LEAST_ALLOCATED:
        x = _sub(a, r)
        if x < 0:
            x = np.int64(0)
    else:
        x = r if r < a else a
    return _mul(x, _MAX_NODE_SCORE)


@_SCALAR
def _fast_per(mode, int_div, a, r):
    """scorers' fast path (every allocatable > 0): floor_div(product, a)."""
    x = _product(mode, a, r)
    if int_div:
        return _floordiv(x, a)
    return np.int64(np.floor(np.float64(x) / np.float64(a)))  # in range: |x| <= 2**63


@_SCALAR
def _slow_per(mode, a, r):
    """scorers' masked path, for a > 0."""
    if mode == LEAST_ALLOCATED:
        return _floordiv(_mul(_sub(a, r), _MAX_NODE_SCORE), a) if r <= a else np.int64(0)
    return _floordiv(_mul(r if r < a else a, _MAX_NODE_SCORE), a)


@_JIT
def _filter(
    free, pod_count, allowed_pods, order, start, to_find,
    fit_cols, fit_vals, masks, mask_ids, out_rows,
):  # fmt: skip
    """Filter the window from ``start`` (rotating), stopping at the ``to_find``-th feasible
    node as algorithm._find_nodes_that_pass_filters does. Returns (found, evaluated)."""
    n = order.shape[0]
    q = fit_cols.shape[0]
    for j in range(q):
        if fit_cols[j] < 0:  # no node has the resource: nothing fits
            return 0, n
    if q <= _TIGHT and mask_ids.shape[0] <= 1:
        # The common shape (up to 4 resources, other filters combined into one mask),
        # unrolled: twice as fast. Unused slots check column 0 >= int64 min: always true.
        c = np.zeros(_TIGHT, dtype=np.int64)
        v = np.full(_TIGHT, _INT64_MIN, dtype=np.int64)
        c[:q] = fit_cols
        v[:q] = fit_vals
        if mask_ids.shape[0] == 1:
            return _filter_tight(
                free, pod_count, allowed_pods, order, start, to_find, c, v,
                masks[mask_ids[0]], True, out_rows,
            )  # fmt: skip
        return _filter_tight(
            free, pod_count, allowed_pods, order, start, to_find, c, v,
            pod_count, False, out_rows,
        )  # fmt: skip
    found = 0
    for i in range(n):
        p = start + i
        if p >= n:
            p -= n
        row = order[p]
        ok = _sub(allowed_pods[row], pod_count[row]) >= 1
        for j in range(q):
            ok = ok and free[fit_cols[j], row] >= fit_vals[j]
        for j in range(mask_ids.shape[0]):
            ok = ok and masks[mask_ids[j], row] != 0
        if ok:
            out_rows[found] = row
            found += 1
            if found == to_find:
                return found, i + 1
    return found, n


@_JIT
def _filter_tight(
    free, pod_count, allowed_pods, order, start, to_find, c, v, mask, use_mask, out_rows
):  # fmt: skip
    """_filter with _TIGHT resource checks and one mask (read, not used, if not use_mask)."""
    n = order.shape[0]
    c0, c1, c2, c3 = c[0], c[1], c[2], c[3]
    v0, v1, v2, v3 = v[0], v[1], v[2], v[3]
    found = 0
    for i in range(n):
        p = start + i
        if p >= n:
            p -= n
        row = order[p]
        ok = (
            (_sub(allowed_pods[row], pod_count[row]) >= 1)
            & (free[c0, row] >= v0)
            & (free[c1, row] >= v1)
            & (free[c2, row] >= v2)
            & (free[c3, row] >= v3)
            & ((not use_mask) | (mask[row] != 0))
        )
        if ok:
            out_rows[found] = row
            found += 1
            if found == to_find:
                return found, i + 1
    return found, n


@_JIT
def _gather(allocatable, requested, nonzero, rows, found, cols, srcs, reqs, alloc, req):
    """noderesources.allocatable_and_requested into alloc/req int64[m, k] for
    ``rows[:found]``: zeros where ``cols`` is -1 (a resource the scorer skips)."""
    for i in range(cols.shape[0]):
        col = cols[i]
        if col < 0:
            alloc[i, :found] = 0
            req[i, :found] = 0
            continue
        src = srcs[i]
        used = requested[col] if src == SRC_REQUESTED else nonzero[src - 1]
        pod = reqs[i]
        for k in range(found):
            row = rows[k]
            alloc[i, k] = allocatable[col, row]
            req[i, k] = _add(used[row], pod)


@_JIT
def _window_flags(alloc, req, found, mode):
    """The numpy scorers' path choice over the whole [m, k] matrix: (every allocatable
    > 0, and then whether floor_div must divide in int64 rather than float64)."""
    m = alloc.shape[0]
    if m == 0 or found == 0 or mode == REQUESTED_TO_CAPACITY_RATIO:
        return False, False
    amax = _INT64_MIN
    bmax = _INT64_MIN
    for i in range(m):
        for k in range(found):
            a = alloc[i, k]
            if a <= 0:
                return False, False
            amax = max(amax, _product(mode, a, req[i, k]))
            bmax = max(bmax, a)
    return True, (amax >= _EXACT_FLOAT_LIMIT or bmax >= _EXACT_FLOAT_LIMIT)


@_JIT
def _fit_into(alloc, req, found, mode, weights, shape_u, shape_s, fit_weight, totals):
    """Add NodeResourcesFit's weighted score to ``totals[:found]``: scorers.least_allocated
    / most_allocated / requested_to_capacity_ratio, on the path numpy takes for this
    window. Returns the range-check status."""
    m = alloc.shape[0]
    fast, int_div = _window_flags(alloc, req, found, mode)
    acc = np.zeros(found, dtype=np.int64)
    wsum = np.zeros(found, dtype=np.int64)
    n_shape = shape_u.shape[0]
    for i in range(m):
        w = weights[i]
        if mode == REQUESTED_TO_CAPACITY_RATIO:
            for k in range(found):
                a = alloc[i, k]
                r = req[i, k]
                util = _MAX_NODE_SCORE
                if a != 0 and r <= a:
                    util = _mul(r, _MAX_NODE_SCORE) // (a if a > 1 else np.int64(1))
                per = shape_s[n_shape - 1]  # scorers.broken_linear: first point util <= u
                for t in range(n_shape):
                    if util <= shape_u[t]:
                        per = shape_s[t]
                        if t > 0:
                            pu = shape_u[t - 1]
                            ps = shape_s[t - 1]
                            d = _div_trunc(_mul(shape_s[t] - ps, _sub(util, pu)), shape_u[t] - pu)
                            per = _add(ps, d)
                        break
                if a > 0 and per > 0:
                    acc[k] = _add(acc[k], _mul(per, w))
                    wsum[k] = _add(wsum[k], w)
        elif fast:
            for k in range(found):
                acc[k] = _add(acc[k], _mul(w, _fast_per(mode, int_div, alloc[i, k], req[i, k])))
        else:
            for k in range(found):
                a = alloc[i, k]
                if a > 0:
                    acc[k] = _add(acc[k], _mul(_slow_per(mode, a, req[i, k]), w))
                    wsum[k] = _add(wsum[k], w)
    s_wsum = np.int64(0)
    for i in range(m):
        s_wsum = _add(s_wsum, weights[i])
    # the default profile's weights sum to 2: floor division by a power of two is an
    # arithmetic shift (also for negative sums), no division per node
    shift = -1
    if fast and s_wsum > 0 and (s_wsum & (s_wsum - 1)) == 0:
        shift = 0
        while (np.int64(1) << shift) < s_wsum:
            shift += 1
    status = STATUS_OK
    for k in range(found):
        if mode == REQUESTED_TO_CAPACITY_RATIO:
            s = np.int64(0)
            if wsum[k] > 0:  # math.Round, half away from zero
                s = _add(_mul(2, acc[k]), wsum[k]) // max(_mul(2, wsum[k]), np.int64(1))
        elif shift >= 0:
            s = acc[k] >> shift
        elif fast:
            s = _floordiv(acc[k], s_wsum)
        else:
            s = _floordiv(acc[k], wsum[k]) if wsum[k] > 0 else np.int64(0)
        if s < 0 or s > _MAX_NODE_SCORE:
            status = STATUS_INVALID_SCORE
        totals[k] = _add(totals[k], _mul(s, fit_weight))
    return status


@_JIT
def _balanced_into(allocatable, requested, rows, found, cols, reqs, bal_weight, totals):
    """Add BalancedAllocation's weighted score to ``totals[:found]``:
    scorers.balanced_allocation over allocatable_and_requested(use_requested=True),
    float64 operations in the same order, truncated. ``cols`` -1: a skipped resource."""
    m = cols.shape[0]
    if m == 2 and cols[0] >= 0 and cols[1] >= 0:
        return _balanced_pair_into(
            allocatable, requested, rows, found, cols, reqs, bal_weight, totals
        )
    frac = np.empty(m, dtype=np.float64)
    status = STATUS_OK
    for k in range(found):
        row = rows[k]
        count = 0
        ftotal = 0.0
        for i in range(m):
            col = cols[i]
            if col < 0:
                continue
            a = allocatable[col, row]
            if a > 0:
                f = np.float64(_add(requested[col, row], reqs[i])) / np.float64(a)
                if f > 1.0:
                    f = 1.0
                frac[count] = f
                ftotal += f
                count += 1
        std = 0.0
        if count == 2:
            std = abs((frac[0] - frac[1]) / 2)
        elif count > 2:
            mean = ftotal / count
            var = 0.0
            for i in range(count):
                d = frac[i] - mean
                var = var + d * d
            std = math.sqrt(var / count)
        s = _to_int((1 - std) * 100.0)
        if s < 0 or s > _MAX_NODE_SCORE:
            status = STATUS_INVALID_SCORE
        totals[k] = _add(totals[k], _mul(s, bal_weight))
    return status


@_JIT
def _balanced_pair_into(allocatable, requested, rows, found, cols, reqs, bal_weight, totals):
    """_balanced_into for two resources both in the table (the default cpu + memory),
    unrolled: std = |f0 - f1| / 2 when both allocatable > 0, else 0 (one or no fraction)."""
    c0, c1 = cols[0], cols[1]
    q0, q1 = reqs[0], reqs[1]
    status = STATUS_OK
    for k in range(found):
        row = rows[k]
        a0 = allocatable[c0, row]
        a1 = allocatable[c1, row]
        std = 0.0
        if a0 > 0 and a1 > 0:
            f0 = np.float64(_add(requested[c0, row], q0)) / np.float64(a0)
            f1 = np.float64(_add(requested[c1, row], q1)) / np.float64(a1)
            std = abs((min(f0, 1.0) - min(f1, 1.0)) / 2)
        s = _to_int((1 - std) * 100.0)
        if s < 0 or s > _MAX_NODE_SCORE:
            status = STATUS_INVALID_SCORE
        totals[k] = _add(totals[k], _mul(s, bal_weight))
    return status


@_JIT
def _normalized_into(norm, norm_ids, norm_reverse, norm_weight, rows, found, totals):
    """Add DefaultNormalizeScore(raw over the window) * weight of each ``norm_ids``
    column to ``totals[:found]``."""
    status = STATUS_OK
    for j in range(norm_ids.shape[0]):
        c = norm_ids[j]
        raw = norm[c]
        reverse = norm_reverse[c] != 0
        weight = norm_weight[c]
        mx = _INT64_MIN
        for k in range(found):
            mx = max(mx, raw[rows[k]])
        for k in range(found):
            s = raw[rows[k]]
            if mx > 0:
                s = _div_trunc(_mul(_MAX_NODE_SCORE, s), mx)
                if reverse:
                    s = _sub(_MAX_NODE_SCORE, s)
            elif reverse:
                s = _MAX_NODE_SCORE
            if s < 0 or s > _MAX_NODE_SCORE:
                status = STATUS_INVALID_SCORE
            totals[k] = _add(totals[k], _mul(s, weight))
    return status


@_JIT
def _score(
    allocatable, requested, nonzero, rows, found,
    mode, fit_weight, s_cols, s_srcs, s_reqs, s_weights, shape_u, shape_s,
    bal_weight, b_cols, b_reqs,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, totals,
):  # fmt: skip
    """Weighted totals of the feasible ``rows[:found]`` into ``totals``, plugin by plugin
    as Framework.weighted_total adds them; returns (best, status of the range check)."""
    totals[:found] = 0
    status = STATUS_OK
    if fit_weight != 0:
        m = s_cols.shape[0]
        alloc = np.empty((m, found), dtype=np.int64)
        req = np.empty((m, found), dtype=np.int64)
        _gather(allocatable, requested, nonzero, rows, found, s_cols, s_srcs, s_reqs, alloc, req)
        st = _fit_into(alloc, req, found, mode, s_weights, shape_u, shape_s, fit_weight, totals)
        status = max(status, st)
    if bal_weight != 0:
        st = _balanced_into(allocatable, requested, rows, found, b_cols, b_reqs, bal_weight, totals)
        status = max(status, st)
    st = _normalized_into(norm, norm_ids, norm_reverse, norm_weight, rows, found, totals)
    status = max(status, st)
    best = _INT64_MIN
    for k in range(found):
        if extra_id >= 0:
            totals[k] = _add(totals[k], extra[extra_id, rows[k]])
        best = max(best, totals[k])
    return best, status


@_JIT
def evaluate_pod_kernel(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    order, start, to_find, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, out,
):  # fmt: skip
    """One pod over one window (arguments: ``evaluate.pack_pod_call``). Fills ``out``
    int64[3, >= min(to_find, n)] with the feasible rows in evaluation order, their totals
    and the positions holding the best total; returns (found, evaluated, best, n_ties,
    status). Fewer than two feasible nodes are not scored (schedule_pod takes the only
    one directly): totals 0."""
    n = order.shape[0]
    if n == 0:
        return 0, 0, 0, 0, STATUS_OK
    rows = out[0]
    totals = out[1]
    ties = out[2]
    found, evaluated = _filter(
        free, pod_count, allowed_pods, order, start % n, to_find,
        fit_req[0], fit_req[1], masks, mask_ids, rows,
    )  # fmt: skip
    if found == 0:
        return 0, evaluated, 0, 0, STATUS_OK
    if found == 1:
        totals[0] = 0
        ties[0] = 0
        return 1, evaluated, 0, 1, STATUS_OK
    best, status = _score(
        allocatable, requested, nonzero, rows, found,
        mode, fit_weight, s_req[0], s_srcs, s_req[1], s_weights, shape_u, shape_s,
        bal_weight, b_req[0], b_req[1],
        norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, totals,
    )  # fmt: skip
    n_ties = 0
    for k in range(found):
        if totals[k] == best:
            ties[n_ties] = k
            n_ties += 1
    return found, evaluated, best, n_ties, status


@_JIT
def evaluate_batch_kernel(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    order, starts, to_find, pod_idx, fit_req, fit_n, masks, mask_ids, mask_n,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_n, norm_reverse, norm_weight, extra, extra_ids, out, meta,
):  # fmt: skip
    """``evaluate_pod_kernel`` for B queries against the same table state. Per query:
    ``starts``, ``to_find``, ``mask_ids``/``norm_ids`` rows (padded; lengths in ``*_n``),
    ``extra_ids``, and ``pod_idx``, the row of its request vectors among the distinct
    ones (``fit_req`` [U, 2, q] with ``fit_n``, ``s_req``, ``bal_weight``, ``b_req``: one
    Deployment's pods share a row). Outputs ``out[b]`` (int64[B, 3, K]) and ``meta[b]``
    (int64[B, 5], the returned tuple)."""
    for b in range(starts.shape[0]):
        u = pod_idx[b]
        r = evaluate_pod_kernel(
            allocatable, requested, free, nonzero, pod_count, allowed_pods,
            order, starts[b], to_find[b], fit_req[u, :, : fit_n[u]], masks,
            mask_ids[b, : mask_n[b]],
            mode, fit_weight, s_req[u], s_srcs, s_weights, shape_u, shape_s, bal_weight[u],
            b_req[u], norm, norm_ids[b, : norm_n[b]], norm_reverse, norm_weight, extra,
            extra_ids[b], out[b],
        )  # fmt: skip
        for f in range(5):
            meta[b, f] = r[f]
