"""Exact weighted chi-square distance of LBP histograms and its nearest neighbour.

Ahonen et al.'s weighted chi-square (Tek's eq. 2.4), ``chi2_w(S, M) = sum_j w_j sum_i
(S_ij - M_ij)**2 / (S_ij + M_ij)`` (i = bin, j = region), in integer fixed point with F
fractional bits and one floor per term:

    T(S, M) = floor((S - M)**2 * 2**F / (S + M))    (0 when S + M = 0)
            = q 2**F + floor(r 2**F / b)            with b = S + M, q = a // b, r = a % b, a = (S - M)**2
    D = sum_j w_j sum_i T(S_ij, M_ij)               (int64)

with ``F = min(20, 30 - bitlen(n))`` for counts at most n (the largest region's pixels). Widths:
``a <= n**2 < 2**30``, ``r 2**F < 2n 2**(30 - bitlen(n)) <= 2**31`` and ``T < 2**30``: every term
is an exact int32; a region's ``sum_i T <= 2**F sum_i |S_i - M_i| <= 2**(F+1) n <= 2**31`` and
``D < 2**31 sum_j w_j < 2**63`` (weights at most 255) in int64. Integer sums are associative, so
any split of the vector (the thesis's p parts, GPU warps, JAX trees) gives the same D.
Error: each floor loses less than 1, so ``0 <= chi2_w - D 2**-F < 2**-F sum_j w_j B_j``
(B_j = bins of region j with S + M > 0). Outside ``0 <= S, M <= n`` the int32 steps wrap:
:func:`chi_square` and :func:`nearest` refuse such counts (:func:`check_counts`); the kernel's
overrides still give the portable version's bits there, so every backend agrees on any input.

The nearest neighbour reuses ``portcv._tiled_nearest.tiled_nearest``: the gallery in
tiles, each tile's distances merged into the running best by the lexicographic
(distance, index) minimum, so ties go to the smaller gallery index on every backend.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from .._tiled_nearest import tiled_nearest
from ..backends import asarray, backend, owner_of, require_dtype, to_numpy

#: Histogram dtypes the distance takes (exact counts).
HISTOGRAM_DTYPES = ("uint8", "uint16", "int32")
#: The largest count of a bin (so that (S - M)**2 < 2**30).
MAX_COUNT = 2**15 - 1
#: The thesis's split of each vector into p sub-vectors (p = 8 was its best); here the parts are
#: groups of regions whose partial sums are added (it bounds the temporaries, not the result).
PARTS = 8
#: Elements of the (queries, gallery, bins) temporaries per tile.
TILE_ELEMENTS = 1 << 22

#: Ahonen, Hadid & Pietikäinen's weights of the 7 x 7 regions of a 130 x 150 face (ECCV 2004,
#: Fig. 5: black 0, dark 1, light 2, white 4; the sum is 56): eyes 4, mouth corners and
#: forehead edges 2, nose bridge and cheek edges 0.
AHONEN_WEIGHTS_7X7 = np.array(
    [[2, 1, 1, 1, 1, 1, 2],
     [2, 4, 4, 1, 4, 4, 2],
     [1, 1, 1, 0, 1, 1, 1],
     [0, 1, 1, 0, 1, 1, 0],
     [0, 1, 1, 1, 1, 1, 0],
     [0, 1, 1, 2, 1, 1, 0],
     [0, 1, 1, 1, 1, 1, 0]], dtype=np.uint8)
AHONEN_WEIGHTS_7X7.flags.writeable = False


def frac_bits(max_count: int) -> int:
    """F = min(20, 30 - bitlen(n)): the fractional bits for counts at most n (20 up to n = 1023)."""
    return min(20, 30 - int(max_count).bit_length())


@kernel("chi_square")
def chi_square_kernel(xp: Any, Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
    """``D[r, c]`` (int64) between queries ``Q`` (r, regions, bins) and gallery rows ``G``
    (c, regions, bins), weights ``W`` (regions,) int64; the regions in ``parts`` groups whose
    int64 partial sums are added (the thesis's p-way split: any grouping, the same D).
    ``max_count`` (the counts' bound n behind ``frac_bits``) is for the overrides' tables."""
    def terms(Qp: Any, Gp: Any) -> Any:
        S, M = xp.astype(Qp, xp.int32), xp.astype(Gp, xp.int32)
        b = S + M
        diff = S - M
        a = diff * diff  # < 2**30
        safe = xp.where(b == 0, 1, b)  # a = 0 there, so T = 0
        q = a // safe
        r = a - q * safe
        return q * (1 << frac_bits) + (r * (1 << frac_bits)) // safe  # int32: < 2**31 (module docstring)

    return _weighted_parts(xp, Q, G, W, parts, terms)


def _weighted_parts(xp: Any, Q: Any, G: Any, W: Any, parts: int, terms: Any) -> Any:
    """``D = sum_j W[j] sum_bins terms(Q[:, j], G[:, j])`` over every query/gallery pair, the
    regions in ``parts`` groups whose int64 partial sums are added; ``terms`` maps the
    ``(r, 1, k, bins)`` and ``(1, c, k, bins)`` counts of ``k`` regions to int32 terms."""
    regions = Q.shape[1]
    step = -(-regions // parts)
    total = None
    for j0 in range(0, regions, step):
        term = terms(Q[:, None, j0:j0 + step, :], G[None, :, j0:j0 + step, :])
        per_region = require_dtype(xp.sum(term, axis=-1, dtype=xp.int64), "int64", "portcv.recognize.chi_square")
        part = xp.sum(per_region * W[j0:j0 + step], axis=-1, dtype=xp.int64)
        total = part if total is None else total + part
    return total


#: The NumPy override reads T from a table of every (S, M) pair when (n + 1)**2 is at most this.
TABLE_ENTRIES = 1 << 20
#: Elements per step of the NumPy override (its temporaries: a few MB).
NUMPY_STEP = 1 << 18


@functools.lru_cache(maxsize=8)
def term_table(max_count: int, frac_bits: int) -> np.ndarray:
    """``T(S, M)`` for every ``S, M <= max_count``, as int32 at index ``S (max_count + 1) + M``."""
    s = np.arange(max_count + 1, dtype=np.int64)
    S, M = s[:, None], s[None, :]
    b = S + M
    T = ((S - M) ** 2 << frac_bits) // np.maximum(b, 1)  # Python-exact int64: < 2**50
    return T.astype(np.int32).reshape(-1)  # T < 2**30


def float_terms(S: np.ndarray, M: np.ndarray, frac_bits: int) -> np.ndarray:
    """``T(S, M)`` of float64 counts by one float64 division (exact: see the override)."""
    b = S + M
    d = S - M
    return np.floor(d * d * float(1 << frac_bits) / np.where(b > 0, b, 1.0))


@chi_square_kernel.override("numpy", supports="counts in [0, max_count] (a table of T for n <= 1023, "
                                              "else float64 division, exact by its bound); others: portable")
def _chi_square_numpy(Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
    """The same D without NumPy's slow integer division, in two exact ways.

    n <= 1023: every ``T(S, M)`` from a host table ((n + 1)**2 int32, 572 KB for n = 378).
    Otherwise float64: ``x = a 2**F < 2**50`` and ``b < 2**16`` are exact, ``x / b`` is one
    correctly rounded division and ``k = floor(x / b) <= n 2**F <= 2**30``. If ``x / b`` is not
    an integer it lies at least ``1 / b > 2**-16`` below ``k + 1``, while half an ulp there is at
    most ``2**-23``: rounding cannot reach ``k + 1``, so ``floor`` of the quotient is ``k``.
    Sums of T are integers below 2**53 (``D < 2**31 sum w``, checked), so float64 holds them.
    """
    from ..backends import backend

    Qn, Gn = np.asarray(Q), np.asarray(G)
    # Counts outside [0, max_count] (above it, or negative int32 entries) are outside the table
    # and the division's bound: the portable int32 steps give their bits.
    low, high = min(int(Qn.min()), int(Gn.min())), max(int(Qn.max()), int(Gn.max()))
    if low < 0 or high > max_count or int(np.asarray(W).sum()) >= 1 << 22:
        return chi_square_kernel.portable(backend().xp, Q, G, W, frac_bits=frac_bits, parts=parts, max_count=max_count)
    rows, cols, regions, bins = Qn.shape[0], Gn.shape[0], Qn.shape[1], Qn.shape[2]
    per_region = np.empty((rows, cols, regions), np.int64)
    use_table = (max_count + 1) ** 2 <= TABLE_ENTRIES
    table = term_table(max_count, frac_bits) if use_table else None
    Qi = Qn.astype(np.int32) * np.int32(max_count + 1) if use_table else Qn.astype(np.float64)
    Gi = Gn.astype(np.int32) if use_table else Gn.astype(np.float64)
    step = max(1, NUMPY_STEP // (regions * bins))  # gallery rows per step
    for r in range(rows):
        for c0 in range(0, cols, step):
            g = Gi[c0:c0 + step]
            if use_table:
                T = table[Qi[r] + g]
                per_region[r, c0:c0 + step] = T.sum(axis=-1, dtype=np.int64)
            else:
                per_region[r, c0:c0 + step] = float_terms(Qi[r], g, frac_bits).sum(axis=-1).astype(np.int64)
    return per_region @ np.asarray(W, np.int64)


def quotient_margin(max_count: int) -> float:
    """``2**-(L+2)``, ``L = bitlen(max_count)``: what :func:`quotient_terms` adds before ``floor``."""
    return 2.0 ** -(int(max_count).bit_length() + 2)


def quotient_terms(xp: Any, S: Any, M: Any, *, frac_bits: int, max_count: int) -> Any:
    """int32 ``T(S, M)`` of counts in ``[0, max_count]`` by one float64 division and a margin.

    ``x = (S - M)**2 2**F < 2**50`` and ``b = S + M < 2**(L+1)`` (``L = bitlen(max_count)``)
    are exact; ``x / b <= max(S, M) 2**F < 2**30``, so a division correctly rounded or a few ulps
    off (a reciprocal times ``x``, as a compiler may emit) is within ``2**-20`` of it. A
    quotient that is not an integer lies at least ``1 / b > 2**-(L+1)`` below the next one, so
    ``floor(x / b + 2**-(L+2))`` is ``floor`` of the true quotient for ``L <= 15``: the margin
    (at least ``2**-17``) lifts an exact quotient computed an ulp low back to its integer and
    cannot carry any other past the next (``2**-(L+2) + 2**-20 < 2**-(L+1)``).
    """
    margin = quotient_margin(max_count)
    S, M = xp.astype(S, xp.float64), xp.astype(M, xp.float64)
    b, d = S + M, S - M
    q = d * d * float(1 << frac_bits) / xp.where(b > 0, b, 1.0)
    return xp.astype(xp.floor(q + margin), xp.int32)


def _chi_square_quotients(xp: Any, Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
    """chi_square_kernel's D by :func:`quotient_terms`, for counts in ``[0, max_count]``."""
    return _weighted_parts(xp, Q, G, W, parts,
                           lambda S, M: quotient_terms(xp, S, M, frac_bits=frac_bits, max_count=max_count))


@functools.lru_cache(maxsize=None)
def _jax_program(name: str) -> Any:
    """The JAX override's compiled program on backend ``name``: the quotient form where every
    count is in ``[0, max_count]`` (checked in the program), else the portable int32 steps."""
    from jax import lax

    from .. import backends

    b = backends.get(name)
    xp = b.xp
    portable = chi_square_kernel.portable

    def program(Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
        params = dict(frac_bits=frac_bits, parts=parts, max_count=max_count)
        fast = _chi_square_quotients(xp, Q, G, W, **params)
        ok = counts_within(xp, (Q, G), max_count)
        if ok is None:
            return fast
        return lax.cond(ok, lambda: fast, lambda: portable(xp, Q, G, W, **params))

    return b.jit(program, static_argnames=("frac_bits", "parts", "max_count"))


@chi_square_kernel.override("jax", supports="every input (counts in [0, max_count]: a float64 quotient per term, exact "
                                            "by a margin; others: the portable int32 steps; on the CPU: the NumPy "
                                            "version through a host callback)")
def _chi_square_jax(Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
    # XLA emulates int32 division in tens of instructions on a GPU, and the portable term takes
    # two; one float64 division replaces both. On the CPU the NumPy version's table is faster.
    b = backend()
    params = dict(frac_bits=frac_bits, parts=parts, max_count=max_count)
    if b.runs_on_host:
        from ..backends.jax import host_call

        return host_call(chi_square_kernel, Q, G, W, **params)
    return _jax_program(b.name)(Q, G, W, **params)


def counts_within(xp: Any, arrays: Any, max_count: int) -> Any:
    """A 0-d boolean array of ``xp``: every count of ``arrays`` is in ``[0, max_count]``, the
    domain of the fixed point. Only what a dtype allows is tested (uint8 counts need no test for
    ``max_count >= 255``, unsigned ones no test of the sign); None when nothing needs a test."""
    checks = []
    for x in arrays:
        sign, bound = count_tests(x.dtype, max_count)
        if sign:
            checks.append(xp.min(x) >= 0)
        if bound:
            checks.append(xp.max(x) <= max_count)
    return functools.reduce(lambda u, v: u & v, checks) if checks else None


def count_tests(dtype: Any, max_count: int) -> tuple[bool, bool]:
    """Whether counts of ``dtype`` can be negative, and whether they can exceed ``max_count``."""
    info = np.iinfo(np.dtype(dtype))
    return info.min < 0, info.max > max_count


def check_counts(query: Any, gallery: Any, max_count: int) -> None:
    """Refuse counts outside ``[0, max_count]``: there the int32 terms wrap and the distance is
    garbage (even negative). The one data-dependent check of :func:`chi_square` and
    :func:`nearest`: where a dtype allows such counts, it reads one boolean back from the
    device (a min/max over the counts)."""
    if not any(any(count_tests(x.dtype, max_count)) for x in (query, gallery)):
        return
    b = backend()
    xp = np if b.runs_on_host else b.xp
    try:
        # On a host backend the counts are in host memory already: test them without compiling anything.
        arrays = tuple(b.to_numpy(x) for x in (query, gallery)) if b.runs_on_host else (query, gallery)
        ok = counts_within(xp, arrays, max_count)
        if ok is None or bool(ok):
            return
    except TypeError as exc:  # a JAX tracer: the values are unknown inside a user's jax.jit
        raise TypeError(f"query and gallery: chi_square/nearest check that every count is in [0, max_count] "
                        f"(max_count={max_count}), which needs their values; call them outside jax.jit, or pass "
                        f"uint8 histograms ({type(exc).__name__})") from None
    for name, x in zip(("query", "gallery"), arrays):
        low, high = int(xp.min(x)), int(xp.max(x))
        if low < 0:
            raise ValueError(f"{name} holds a negative count ({low}): histogram counts must be >= 0")
        if high > MAX_COUNT:
            raise ValueError(f"{name} holds a count of {high}; the exact fixed point takes counts up to "
                             f"{MAX_COUNT} (max_count's bound; lbp_histograms' largest region): use smaller "
                             "regions or scale the histograms down")
        if high > max_count:  # an explicit max_count: the defaults are 255 for uint8 and MAX_COUNT
            raise ValueError(f"{name} holds a count of {high}, above max_count={max_count}: the fixed point is "
                             f"exact only for counts in [0, max_count]; pass max_count={high} or larger (the "
                             f"largest region's pixel count), at most {MAX_COUNT}")


def _histograms(x: Any, name: str) -> Any:
    return _validate.matrix(x, name, dtypes=HISTOGRAM_DTYPES, hint="; lbp_histograms returns such counts", two_d=False)


def check_distance_args(query: Any, gallery: Any, weights: Any, max_count: Any, *,
                        counts: bool = True) -> tuple[Any, Any, Any, dict, bool]:
    """Validate; return (queries (m, regions, bins), gallery (n, regions, bins), weights (regions,)
    int64, static params, single-query flag), all on the active backend. ``counts=False`` skips
    :func:`check_counts`, for callers whose counts are within ``max_count`` by construction (the
    recognizer's own histograms)."""
    gallery = _histograms(gallery, "gallery")
    query = _histograms(query, "query")
    if gallery.ndim < 2:
        raise ValueError(f"gallery must be (n, ..., bins): one histogram vector per row, got shape {tuple(gallery.shape)}")
    row = tuple(gallery.shape[1:])
    if tuple(query.shape) == row:
        single = True
    elif query.ndim == gallery.ndim and tuple(query.shape[1:]) == row:
        single = False
    else:
        raise ValueError(f"query of shape {tuple(query.shape)} does not match the gallery's histograms {row} "
                         f"(mismatched histogram lengths): pass one {row} histogram or (m, *{row})")
    regions_shape, bins = row[:-1], row[-1]
    regions = math.prod(regions_shape)
    if weights is None:
        w = np.ones(regions, np.int64)
    else:
        if owner_of(weights) is not None and not isinstance(weights, np.ndarray):
            weights = to_numpy(weights)
        try:
            w = np.asarray(weights)
        except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
            raise ValueError(f"weights must be a rectangular array of one integer per region {regions_shape}; "
                             f"got a ragged nested {type(weights).__name__}") from None
        if not (np.issubdtype(w.dtype, np.integer) or w.dtype == bool):
            raise TypeError(f"weights must be integers in [0, 255] (the exact distance needs integer weights), got {w.dtype}")
        if w.size != regions or (w.shape != regions_shape and w.ndim != 1):
            raise ValueError(f"weights must have one entry per region {regions_shape}, got shape {w.shape} "
                             f"(mismatched histogram lengths)")
        if w.min() < 0 or w.max() > 255:
            raise ValueError(f"weights must be in [0, 255], got [{w.min()}, {w.max()}]")
        w = w.astype(np.int64).reshape(-1)
    default = 255 if np.dtype(gallery.dtype) == np.uint8 and np.dtype(query.dtype) == np.uint8 else MAX_COUNT
    n = default if max_count is None else _validate.integer(max_count, "max_count", low=1, high=MAX_COUNT)
    if counts:
        check_counts(query, gallery, n)
    Q = backend().xp.reshape(query, (1 if single else query.shape[0], regions, bins))
    G = backend().xp.reshape(gallery, (gallery.shape[0], regions, bins))
    parts = max(1, min(PARTS, regions))
    return Q, G, asarray(w), {"frac_bits": frac_bits(n), "parts": parts, "max_count": n}, single


def chi_square(query: Any, gallery: Any, *, weights: Any = None, max_count: int | None = None) -> tuple[Any, int]:
    """Exact weighted chi-square distances of LBP histograms, in integer fixed point.

    ``D * 2**-frac_bits`` is Ahonen et al.'s ``sum_j w_j sum_i (S_ij - M_ij)**2 / (S_ij + M_ij)``
    with each term floored to ``frac_bits`` fractional bits (Tek's eq. 2.4); the same int64 bits
    on every backend.

    Parameters
    ----------
    query : (..., bins) or (m, ..., bins) array of uint8, uint16 or int32
        One histogram vector (e.g. ``(ny, nx, bins)`` from :func:`lbp_histograms`) or m of them.
    gallery : (n, ..., bins) array of uint8, uint16 or int32
        The reference histograms; the axes between n and bins are the regions.
    weights : (...) array of int in [0, 255], optional
        One weight per region (e.g. :data:`AHONEN_WEIGHTS_7X7`); default all 1.
    max_count : int, optional
        The largest count of any bin (e.g. the largest region's pixel count, at most 32,767);
        it sets ``frac_bits = min(20, 30 - bitlen(max_count))``. Default: 255 for uint8
        histograms (F = 20), else 32,767 (F = 15). A count above it, or a negative one, is
        refused (there the fixed point would wrap).

    Returns
    -------
    D : (n,) or (m, n) int64 array
        On the active backend.
    frac_bits : int
        F: ``D * 2.0**-F`` is the distance.

    Raises
    ------
    ValueError
        A count outside ``[0, max_count]`` (naming the argument, the count and the bound). To
        find one, the counts are read: one boolean comes back from the device (a min/max
        reduction over query and gallery), except for uint8 histograms with ``max_count >= 255``,
        whose counts cannot leave the bound; inside a user's ``jax.jit`` that read is a
        ``TypeError``.

    Notes
    -----
    Per bin ``T = floor((S - M)**2 2**F / (S + M))`` as ``q 2**F + floor(r 2**F / b)`` in int32
    (``q, r`` the quotient and remainder of ``(S - M)**2`` by ``b = S + M``), summed per region
    in int64 and weighted. ``0 <= chi2_w - D 2**-F < 2**-F sum_j w_j B_j`` (``B_j`` the
    non-empty bins of region j): below 0.0032 for 7 x 7 (8, 2)^u2 with Ahonen's weights.

    References
    ----------
    T. Ahonen, A. Hadid, M. Pietikäinen, "Face recognition with local binary patterns", ECCV
    2004, doi:10.1007/978-3-540-24670-1_36. S. C. Tek, M.Sc. thesis, ITU, 2012, eq. 2.4.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> S = np.array([[3, 1, 0], [2, 2, 0]], np.uint8)           # 2 regions of 3 bins
    >>> M = np.array([[[1, 3, 0], [2, 2, 0]], [[3, 1, 0], [0, 0, 4]]], np.uint8)
    >>> D, F = portcv.recognize.chi_square(S, M, weights=[2, 1])
    >>> portcv.to_numpy(D) * 2.0**-F                             # 2 (4/4 + 4/4) + 0; 0 + (4/2 + 4/2 + 16/4)
    array([4., 8.])
    """
    Q, G, W, params, single = check_distance_args(query, gallery, weights, max_count)
    if Q.shape[0] * G.shape[0] > _validate.MAX_ELEMENTS:
        raise ValueError(f"query and gallery: the {Q.shape[0]} x {G.shape[0]} distance matrix would have more than "
                         f"{_validate.MAX_ELEMENTS} entries; nearest() finds the nearest rows without forming it")
    xp = backend().xp
    rows, cols = _tile(G.shape[0], Q.shape[1] * Q.shape[2])
    blocks = []
    for r0 in range(0, Q.shape[0], rows):
        row = [chi_square_kernel(Q[r0:r0 + rows], G[c0:c0 + cols], W, **params) for c0 in range(0, G.shape[0], cols)]
        blocks.append(row[0] if len(row) == 1 else xp.concat(row, axis=1))
    D = blocks[0] if len(blocks) == 1 else xp.concat(blocks, axis=0)
    return (D[0] if single else D), params["frac_bits"]


def _tile(n: int, d: int, k: int = 1) -> tuple[int, int]:
    """(query rows, gallery columns) per call of the chi-square kernel: its per-bin terms
    (rows x cols x d) stay within ``TILE_ELEMENTS``, or its distances on an accelerator, where
    the kernel keeps no per-bin terms (CuPy's CUDA kernel; XLA on a GPU fuses the terms into
    their sums); at least ``k`` columns."""
    if not backend().runs_on_host:
        d = 1
    cols = max(k, min(n, max(1, TILE_ELEMENTS // d)))
    return max(1, TILE_ELEMENTS // (cols * d)), cols


def nearest(query: Any, gallery: Any, *, k: int = 1, weights: Any = None, max_count: int | None = None) -> tuple[Any, Any]:
    """The k nearest gallery histograms of each query by the exact weighted chi-square.

    The 1-NN (k-NN) classifier of Ahonen et al. and Tek's thesis (§3.2.2): distances of
    :func:`chi_square`, ordered by (distance, gallery index), so equal distances go to the
    smaller index on every backend. The m x n distance matrix is never formed: the gallery runs
    in tiles merged into the running k best (the machinery of :func:`portcv.distance.nearest`).

    Parameters
    ----------
    query, gallery, weights, max_count
        As in :func:`chi_square`.
    k : int
        Neighbours per query, ``1 <= k <= n``.

    Returns
    -------
    indices : (k,) or (m, k) int32 array
        Gallery rows, nearest first.
    distances : (k,) or (m, k) int64 array
        Their fixed-point distances ``D`` (times ``2**-frac_bits`` of :func:`chi_square`).

    Raises
    ------
    ValueError
        A count outside ``[0, max_count]``, read as in :func:`chi_square`.

    Notes
    -----
    The thesis splits each vector into p = 8 sub-vectors whose partial distances are summed;
    here the regions are split into 8 groups the same way (exact integer partial sums, so the
    split changes nothing but the size of the temporaries).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> gallery = np.array([[2, 2], [0, 4], [2, 2], [4, 0]], np.uint8)   # rows 0 and 2 tie
    >>> idx, D = portcv.recognize.nearest(np.array([3, 1], np.uint8), gallery, k=3)
    >>> portcv.to_numpy(idx)                                  # 1/5 + 1/3 twice, then 1/7 + 1
    array([0, 2, 3], dtype=int32)
    >>> portcv.to_numpy(D)                                    # 2**-20 units, each term floored
    array([ 559240,  559240, 1198372])
    """
    k = _validate.integer(k, "k", low=1)
    Q, G, W, params, single = check_distance_args(query, gallery, weights, max_count)
    idx, D = nearest_rows(Q, G, W, params, k)
    return (idx[0], D[0]) if single else (idx, D)


def nearest_rows(Q: Any, G: Any, W: Any, params: dict, k: int) -> tuple[Any, Any]:
    """:func:`nearest` of the (m, regions, bins) queries of :func:`check_distance_args`."""
    n = G.shape[0]
    if k > n:
        raise ValueError(f"k must be at most the number of gallery rows ({n}), got {k}")
    return tiled_nearest(lambda q, g: chi_square_kernel(q, g, W, **params), Q, G, k=k,
                         tile=_tile(n, Q.shape[1] * Q.shape[2], k))
