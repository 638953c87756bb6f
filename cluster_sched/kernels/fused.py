"""The compiled passes: Filter, Score and the best-score tie set of one pod (or a batch).

Plain arrays in (``kernels.evaluate`` packs them). The arithmetic transcribes the numpy
plugins (``plugins/noderesources``) operation by operation, int64 wrap-around and float64
rounding included, so both agree bit for bit on every input the plugins accept
(``tests/kernels``). Where the numpy scorers take a whole-window fast path
(``alloc.min() > 0``; float64 division below 2**46) the same path is taken: they only
differ once int64 products wrap, and then the reference is what the plugins do.

Per-node work is inline in each pass's loop, calling scalar helpers only (``kernels.scalar``,
inlined): a per-node call taking arrays keeps numba's atomic reference counting on them,
ten times the arithmetic. numba's on-disk cache only notices edits to the caller's own
file, hence ``SCALAR_DIGEST``. Loops over a window are written branch-free over
contiguous loads where they can be, so that the compiler vectorises them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cluster_sched.kernels.scalar import (
    INT64_MIN,
    MAX_NODE_SCORE,
    REQUESTED_TO_CAPACITY_RATIO,
    balanced_pair,
    div_trunc,
    floordiv,
    product,
    slow_per,
    to_int,
    wrap_add,
    wrap_mul,
    wrap_sub,
)

#: Where a score resource's "used" amount comes from (``s_srcs``): requested[col], or
#: the non-zero cpu / memory accounting (NodeResourcesFit scores cpu/memory that way).
SRC_REQUESTED = 0
SRC_NONZERO_CPU = 1
SRC_NONZERO_MEMORY = 2
#: ``status``: a plugin's score left [0, 100]; the caller re-runs the numpy path, which
#: raises the framework's error with the plugin's name (it needs int64 overflow to happen).
STATUS_OK = 0
STATUS_INVALID_SCORE = 1
#: sha256 of ``kernels/scalar.py``, whose helpers are compiled into these kernels: an
#: edit there changes this line, so numba's cache of this file is invalidated too.
SCALAR_DIGEST = "787546c184ab9e5a76611144d9f47bf7c8754775dcf8ad8ece066abbd746d0ff"

_EXACT_FLOAT_LIMIT = np.int64(2**46)  # scorers.EXACT_FLOAT_LIMIT
_BLOCK = 256  # window positions _filter checks per vectorised loop

_JIT = njit(cache=True, nogil=True, error_model="numpy")


@_JIT
def _filter(
    free, pod_count, allowed_pods, order, start, to_find,
    fit_cols, fit_vals, masks, mask_ids, out_rows,
):  # fmt: skip
    """Filter the window from ``start`` (rotating), stopping at the ``to_find``-th feasible
    node as algorithm._find_nodes_that_pass_filters does. Returns (found, evaluated).

    The window is walked in blocks of _BLOCK positions, each check (pod count, every
    resource, every mask) one branch-free loop over the block, which the compiler
    vectorises. A block whose rows are one run (order[p + j] == order[p] + j: nodes
    listed as they were added, the usual case) reads column slices; any other block
    reads through ``order``. The passing rows are then taken in order."""
    n = order.shape[0]
    for j in range(fit_cols.shape[0]):
        if fit_cols[j] < 0:  # no node has the resource: nothing fits
            return 0, n
    ok = np.empty(_BLOCK, dtype=np.bool_)
    found = 0
    i = 0
    while i < n:
        p = start + i
        if p >= n:
            p -= n
        blk = min(_BLOCK, n - i, n - p)  # never across the end of ``order``
        r0 = order[p]
        off = np.int64(0)
        for j in range(blk):
            off |= order[p + j] ^ (r0 + j)
        if off == 0:  # slices: no negative-index select per load, contiguous loads
            ap, pc = allowed_pods[r0 : r0 + blk], pod_count[r0 : r0 + blk]
            for j in range(blk):
                ok[j] = wrap_sub(ap[j], pc[j]) >= 1
            for c in range(fit_cols.shape[0]):
                col, v = free[fit_cols[c], r0 : r0 + blk], fit_vals[c]
                for j in range(blk):
                    ok[j] &= col[j] >= v
            for m in range(mask_ids.shape[0]):
                mk = masks[mask_ids[m], r0 : r0 + blk]
                for j in range(blk):
                    ok[j] &= mk[j] != 0
            passed = 0
            for j in range(blk):
                passed += ok[j]
            if passed == blk and found + blk <= to_find:  # all pass: the run itself
                for j in range(blk):
                    out_rows[found + j] = r0 + j
                found += blk
                i += blk
                if found == to_find:
                    return found, i
                continue
        else:
            rows = order[p : p + blk]
            for j in range(blk):
                ok[j] = wrap_sub(allowed_pods[rows[j]], pod_count[rows[j]]) >= 1
            for c in range(fit_cols.shape[0]):
                col, v = free[fit_cols[c]], fit_vals[c]
                for j in range(blk):
                    ok[j] &= col[rows[j]] >= v
            for m in range(mask_ids.shape[0]):
                mk = masks[mask_ids[m]]
                for j in range(blk):
                    ok[j] &= mk[rows[j]] != 0
        for j in range(blk):
            if ok[j]:
                out_rows[found] = order[p + j]
                found += 1
                if found == to_find:
                    return found, i + j + 1
        i += blk
    return found, n


@_JIT
def _gather(allocatable, requested, nonzero, rows, found, dense, cols, srcs, reqs, alloc, req):
    """noderesources.allocatable_and_requested into alloc/req int64[m, k] for
    ``rows[:found]``: zeros where ``cols`` is -1 (a resource the scorer skips). ``dense``:
    the rows are rows[0], rows[0] + 1, ...: plain loads, which the compiler vectorises."""
    r0 = rows[0]
    for i in range(cols.shape[0]):
        col = cols[i]
        if col < 0:
            alloc[i, :found] = 0
            req[i, :found] = 0
            continue
        src = srcs[i]
        a_col = allocatable[col]
        used = requested[col] if src == SRC_REQUESTED else nonzero[src - 1]
        pod = reqs[i]
        if dense:  # slices: k >= 0 is known, so no negative-index select per load
            a_win = a_col[r0 : r0 + found]
            u_win = used[r0 : r0 + found]
            for k in range(found):
                alloc[i, k] = a_win[k]
                req[i, k] = wrap_add(u_win[k], pod)
        else:
            for k in range(found):
                row = rows[k]
                alloc[i, k] = a_col[row]
                req[i, k] = wrap_add(used[row], pod)


@_JIT
def _window_flags(alloc, req, found, mode):
    """The numpy scorers' path choice over the whole [m, k] matrix: (every allocatable
    > 0, and then whether floor_div must divide in int64 rather than float64). One
    branch-free reduction (vectorised); the maxima only matter when the minimum is > 0."""
    m = alloc.shape[0]
    if m == 0 or found == 0 or mode == REQUESTED_TO_CAPACITY_RATIO:
        return False, False
    amin = np.iinfo(np.int64).max
    amax = INT64_MIN
    bmax = INT64_MIN
    for i in range(m):
        for k in range(found):
            a = alloc[i, k]
            amin = min(amin, a)
            amax = max(amax, product(mode, a, req[i, k]))
            bmax = max(bmax, a)
    if amin <= 0:
        return False, False
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
                util = MAX_NODE_SCORE
                if a != 0 and r <= a:
                    util = wrap_mul(r, MAX_NODE_SCORE) // (a if a > 1 else np.int64(1))
                per = shape_s[n_shape - 1]  # scorers.broken_linear: first point util <= u
                for t in range(n_shape):
                    if util <= shape_u[t]:
                        per = shape_s[t]
                        if t > 0:
                            pu = shape_u[t - 1]
                            ps = shape_s[t - 1]
                            d = div_trunc(
                                wrap_mul(shape_s[t] - ps, wrap_sub(util, pu)), shape_u[t] - pu
                            )
                            per = wrap_add(ps, d)
                        break
                if a > 0 and per > 0:
                    acc[k] = wrap_add(acc[k], wrap_mul(per, w))
                    wsum[k] = wrap_add(wsum[k], w)
        elif fast and not int_div:  # scorers' fast path in float64; split out: it vectorises
            for k in range(found):
                a = alloc[i, k]
                per = np.int64(np.floor(np.float64(product(mode, a, req[i, k])) / np.float64(a)))
                acc[k] = wrap_add(acc[k], wrap_mul(w, per))
        elif fast:
            for k in range(found):
                per = floordiv(product(mode, alloc[i, k], req[i, k]), alloc[i, k])
                acc[k] = wrap_add(acc[k], wrap_mul(w, per))
        else:
            for k in range(found):
                a = alloc[i, k]
                if a > 0:
                    acc[k] = wrap_add(acc[k], wrap_mul(slow_per(mode, a, req[i, k]), w))
                    wsum[k] = wrap_add(wsum[k], w)
    s_wsum = np.int64(0)
    for i in range(m):
        s_wsum = wrap_add(s_wsum, weights[i])
    # the default profile's weights sum to 2: floor division by a power of two is an
    # arithmetic shift (also for negative sums), no division per node
    shift = -1
    if fast and s_wsum > 0 and (s_wsum & (s_wsum - 1)) == 0:
        shift = 0
        while (np.int64(1) << shift) < s_wsum:
            shift += 1
    bad = False
    if mode != REQUESTED_TO_CAPACITY_RATIO and shift >= 0:  # its own loop: it vectorises
        for k in range(found):
            s = acc[k] >> shift
            bad |= (s < 0) | (s > MAX_NODE_SCORE)
            totals[k] = wrap_add(totals[k], wrap_mul(s, fit_weight))
        return STATUS_INVALID_SCORE if bad else STATUS_OK
    status = STATUS_OK
    for k in range(found):
        if mode == REQUESTED_TO_CAPACITY_RATIO:
            s = np.int64(0)
            if wsum[k] > 0:  # math.Round, half away from zero
                s = wrap_add(wrap_mul(2, acc[k]), wsum[k]) // max(wrap_mul(2, wsum[k]), np.int64(1))
        elif fast:
            s = floordiv(acc[k], s_wsum)
        else:
            s = floordiv(acc[k], wsum[k]) if wsum[k] > 0 else np.int64(0)
        if s < 0 or s > MAX_NODE_SCORE:
            status = STATUS_INVALID_SCORE
        totals[k] = wrap_add(totals[k], wrap_mul(s, fit_weight))
    return status


@_JIT
def _balanced_into(allocatable, requested, rows, found, dense, cols, reqs, bal_weight, totals):
    """Add BalancedAllocation's weighted score to ``totals[:found]``:
    scorers.balanced_allocation over allocatable_and_requested(use_requested=True),
    float64 operations in the same order, truncated. ``cols`` -1: a skipped resource."""
    m = cols.shape[0]
    if m == 2 and cols[0] >= 0 and cols[1] >= 0:
        return _balanced_pair_into(
            allocatable, requested, rows, found, dense, cols, reqs, bal_weight, totals
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
                f = np.float64(wrap_add(requested[col, row], reqs[i])) / np.float64(a)
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
        s = to_int((1 - std) * 100.0)
        if s < 0 or s > MAX_NODE_SCORE:
            status = STATUS_INVALID_SCORE
        totals[k] = wrap_add(totals[k], wrap_mul(s, bal_weight))
    return status


@_JIT
def _balanced_pair_into(allocatable, requested, rows, found, dense, cols, reqs, bal_weight, totals):
    """_balanced_into for two resources both in the table (the default cpu + memory)."""
    a0s, a1s = allocatable[cols[0]], allocatable[cols[1]]
    u0s, u1s = requested[cols[0]], requested[cols[1]]
    q0, q1 = reqs[0], reqs[1]
    bad = False
    if dense:  # slices, as _gather
        r0 = rows[0]
        a0w, a1w = a0s[r0 : r0 + found], a1s[r0 : r0 + found]
        u0w, u1w = u0s[r0 : r0 + found], u1s[r0 : r0 + found]
        for k in range(found):
            s = balanced_pair(a0w[k], a1w[k], wrap_add(u0w[k], q0), wrap_add(u1w[k], q1))
            bad |= (s < 0) | (s > MAX_NODE_SCORE)
            totals[k] = wrap_add(totals[k], wrap_mul(s, bal_weight))
    else:
        for k in range(found):
            row = rows[k]
            s = balanced_pair(a0s[row], a1s[row], wrap_add(u0s[row], q0), wrap_add(u1s[row], q1))
            bad |= (s < 0) | (s > MAX_NODE_SCORE)
            totals[k] = wrap_add(totals[k], wrap_mul(s, bal_weight))
    return STATUS_INVALID_SCORE if bad else STATUS_OK


@_JIT
def _window(col, rows, found, dense):
    """``col[rows[:found]]``: a slice of ``col`` for dense rows (see _gather), else a copy."""
    if dense:
        return col[rows[0] : rows[0] + found]
    out = np.empty(found, dtype=col.dtype)
    for k in range(found):
        out[k] = col[rows[k]]
    return out


@_JIT
def _normalized_into(norm, norm_ids, norm_reverse, norm_weight, rows, found, dense, totals):
    """Add DefaultNormalizeScore(raw over the window) * weight of each ``norm_ids``
    column to ``totals[:found]``. One loop per case (raw maximum > 0, reverse), each
    without branches, so that they vectorise."""
    bad = False
    for j in range(norm_ids.shape[0]):
        c = norm_ids[j]
        raw = _window(norm[c], rows, found, dense)
        reverse = norm_reverse[c] != 0
        weight = norm_weight[c]
        mx = INT64_MIN
        for k in range(found):
            mx = max(mx, raw[k])
        if mx > 0:
            for k in range(found):
                s = div_trunc(wrap_mul(MAX_NODE_SCORE, raw[k]), mx)
                s = wrap_sub(MAX_NODE_SCORE, s) if reverse else s
                bad |= (s < 0) | (s > MAX_NODE_SCORE)
                totals[k] = wrap_add(totals[k], wrap_mul(s, weight))
        elif reverse:
            for k in range(found):
                totals[k] = wrap_add(totals[k], wrap_mul(MAX_NODE_SCORE, weight))
        else:
            for k in range(found):
                s = raw[k]
                bad |= (s < 0) | (s > MAX_NODE_SCORE)
                totals[k] = wrap_add(totals[k], wrap_mul(s, weight))
    return STATUS_INVALID_SCORE if bad else STATUS_OK


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
    r0 = rows[0]
    off = np.int64(0)
    for k in range(found):  # every feasible row in one run: rows[0], rows[0] + 1, ...
        off |= rows[k] ^ (r0 + k)
    dense = off == 0
    if fit_weight != 0:
        m = s_cols.shape[0]
        alloc = np.empty((m, found), dtype=np.int64)
        req = np.empty((m, found), dtype=np.int64)
        _gather(
            allocatable, requested, nonzero, rows, found, dense, s_cols, s_srcs, s_reqs, alloc, req
        )
        st = _fit_into(alloc, req, found, mode, s_weights, shape_u, shape_s, fit_weight, totals)
        status = max(status, st)
    if bal_weight != 0:
        st = _balanced_into(
            allocatable, requested, rows, found, dense, b_cols, b_reqs, bal_weight, totals
        )
        status = max(status, st)
    st = _normalized_into(norm, norm_ids, norm_reverse, norm_weight, rows, found, dense, totals)
    status = max(status, st)
    if extra_id >= 0:
        more = _window(extra[extra_id], rows, found, dense)
        for k in range(found):
            totals[k] = wrap_add(totals[k], more[k])
    best = INT64_MIN
    for k in range(found):
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
