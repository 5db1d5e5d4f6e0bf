"""Pairwise squared Euclidean distance of integer feature vectors: Lin et al., eq. (3).

``P[i, j] = sum_k (F[i, k] - D[j, k])**2`` for extracted features ``F`` (m x l) and a database
``D`` (n x l), computed exactly in integers through the expansion
``P = ||f||^2 + ||d||^2 - 2 f.d``: one matrix product (the paper's tiled kernel is the same
product, its Table 3 "pairwise distance" column) and two row norms. The portable array-API
version is the NumPy reference (on the read-only test backend) and the JAX path under ``jit``;
NumPy runs an exact float BLAS product, JAX an integer ``dot_general`` (int8 x int8 -> int32
for 8-bit features, the tensor-core GEMM on a GPU) and CuPy its own int8 tensor-core kernel
(``_sqeuclidean_cuda.cu``, launched by ``_sqeuclidean_cuda.py``), which
:func:`~portcv.distance.nearest` also runs fused with the argmin.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend, require_dtype
from ..backends.jax import jit

#: The feature dtypes the distance takes: exact integers only.
FEATURE_DTYPES = ("uint8", "int8", "uint16", "int16", "int32")
#: Subtracted before the products (maps unsigned features onto the signed type of their width:
#: differences are unchanged, magnitudes halve) and the value range ``max - min`` of the dtype
#: (None: int32, whose range is read from the data).
_CENTER = {"uint8": 128, "int8": 0, "uint16": 32768, "int16": 0, "int32": 0}
_RANGE = {"uint8": 255, "int8": 255, "uint16": 65535, "int16": 65535, "int32": None}
#: The largest |value| of a feature after centering (8-bit: -128..127, 16-bit: -32768..32767).
_MAGNITUDE = {"uint8": 128, "int8": 128, "uint16": 32768, "int16": 32768}
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def result_dtype(feature_dtype: Any, length: int) -> str:
    """``"int32"`` when every distance of ``length``-long features of ``feature_dtype`` fits it
    (``length * range**2 <= 2**31 - 1``; uint8/int8: ``length <= 33,025``), else ``"int64"``.

    Decided from the dtype and the length only (static), never from the data.
    """
    value_range = _RANGE[np.dtype(feature_dtype).name]
    if value_range is not None and length * value_range**2 <= INT32_MAX:
        return "int32"
    return "int64"


def _dtype_hint(x: Any, name: str) -> str:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return ""
    kind = np.dtype(dtype).kind
    if kind in "fc":
        return (f". Float features cannot give the same bits on every backend: quantize them first with "
                f"portcv.distance.quantize_features({name}, scale)")
    if kind in "iu":
        return f"; wider integers: cast {name} to int32 if its values fit"
    return ""


def check_pair(F: Any, D: Any) -> tuple[Any, Any, dict]:
    """Validate the two feature matrices, move them to the active backend and return them with
    the static parameters of :func:`sqeuclidean_kernel` (``center``, ``dtype``)."""
    F = _validate.matrix(F, "F", dtypes=FEATURE_DTYPES, hint=_dtype_hint(F, "F"))
    D = _validate.matrix(D, "D", dtypes=FEATURE_DTYPES, hint=_dtype_hint(D, "D"))
    dtype = np.dtype(F.dtype)
    if np.dtype(D.dtype) != dtype:
        raise TypeError(f"D must have F's dtype {dtype}, got {np.dtype(D.dtype)}")
    length = F.shape[1]
    if D.shape[1] != length:
        raise ValueError(f"F and D must have the same number of features (columns): F has shape "
                         f"{tuple(F.shape)}, D has shape {tuple(D.shape)}")
    if dtype == np.int32:
        # The one data-dependent check (it reads two numbers back from the device): distances of
        # int32 features are int64, exact when l * (max - min)**2 fits.
        xp = backend().xp
        lo = min(int(xp.min(F)), int(xp.min(D)))
        hi = max(int(xp.max(F)), int(xp.max(D)))
        if length * (hi - lo) ** 2 > INT64_MAX:
            raise ValueError(
                f"F and D: int32 features spanning [{lo}, {hi}] over {length} features could overflow the "
                "int64 distances (l * (max - min)**2 must be < 2**63); rescale them")
    return F, D, {"center": _CENTER[dtype.name], "dtype": result_dtype(dtype, length)}


def _require(x: Any, dtype: str) -> Any:
    return require_dtype(x, dtype, "portcv.distance (exact distances)")


# --------------------------------------------------------------------------------------------
# The kernel: eq. (3) as ||f||^2 + ||d||^2 - 2 f.d in integers
# --------------------------------------------------------------------------------------------
@kernel("sqeuclidean")
def sqeuclidean_kernel(xp: Any, F: Any, D: Any, *, center: int, dtype: str) -> Any:
    """Portable eq. (3): ``P = ||f||^2 + ||d||^2 - 2 f.d`` in the result type ``dtype`` (W).

    Exact: after subtracting ``center`` every 8-bit feature is in [-128, 127], so with
    ``l <= 33,025`` (W = int32) ``||f||^2, |f.d| <= l * 2**14`` and every intermediate is below
    ``l * 2**15 < 2**31``; 16-bit features (W = int64) stay below ``l * 2**31 < 2**63``. For
    int32 features the arithmetic is modulo 2**64 (two's-complement integer arrays wrap on
    every backend), and since the true result lies in [0, 2**63) (checked from the data) the
    wrapped result is that value even if an intermediate wrapped.
    """
    wide = getattr(xp, dtype)
    f = _require(xp.astype(F, wide), dtype)
    d = _require(xp.astype(D, wide), dtype)
    if center:
        f = f - center
        d = d - center
    nf = xp.sum(f * f, axis=1, dtype=wide)
    nd = xp.sum(d * d, axis=1, dtype=wide)
    cross = xp.matmul(f, xp.permute_dims(d, (1, 0)))
    return (nf[:, None] + nd[None, :]) - 2 * cross


@sqeuclidean_kernel.override(
    "numpy", supports="every input (an exact float32/float64 BLAS product for 8- and 16-bit features)")
def _sqeuclidean_numpy(F: Any, D: Any, *, center: int, dtype: str) -> Any:
    """One BLAS GEMM on augmented rows: ``[f, ||f||^2, 1] . [-2 d, 1, ||d||^2] = P``.

    Exact in floating point: every term and partial sum is an integer, and in any
    summation order (BLAS blocking, FMA) a partial sum is bounded by the sum of |terms|,
    ``2 l M^2 + l M^2 + l M^2 = 4 l M^2`` with M the largest centered magnitude (128 or 32768).
    While that is <= 2**24 (float32: 8-bit features, l <= 256, SIFT's 128 included) or <= 2**53
    (float64: 8-bit l <= 2**37, 16-bit l <= 2**21), no operation rounds, and the cast to the
    integer result is exact. int32 features (or longer vectors) run the portable integer code.
    """
    length = F.shape[1]
    magnitude = _MAGNITUDE.get(np.dtype(F.dtype).name)
    if magnitude is None or 4 * length * magnitude**2 > 2**53:
        return sqeuclidean_kernel.portable(np, F, D, center=center, dtype=dtype)
    work = np.float32 if 4 * length * magnitude**2 <= 2**24 else np.float64
    out = np.empty((F.shape[0], D.shape[0]), dtype)
    # Blocks of rows keep the float copies of the features near FEATURE_BLOCK elements (a
    # gallery of 20,000 LBP histograms of 11,907 bins would be 1.9 GB of float64 in one piece).
    rows = max(1, FEATURE_BLOCK // (length + 2))
    for r0 in range(0, F.shape[0], rows):
        left = _augmented(F[r0:r0 + rows], center, work, norm_first=False)
        for c0 in range(0, D.shape[0], rows):
            right = _augmented(D[c0:c0 + rows], center, work, norm_first=True)
            # The longer side as GEMM rows: OpenBLAS splits a short product over its threads
            # poorly (a 64-row one was much slower than the transposed product; docs/benchmarks.md).
            block = left @ right.T if len(left) >= len(right) else (right @ left.T).T
            out[r0:r0 + rows, c0:c0 + rows] = block  # float -> int: exact
    return out


#: Feature elements per block of the NumPy BLAS path (4M: 32 MB of float64).
FEATURE_BLOCK = 1 << 22


def _augmented(x: Any, center: int, work: Any, *, norm_first: bool) -> Any:
    """Rows ``[x - c, ||x - c||^2, 1]`` (queries) or ``[-2 (x - c), 1, ||x - c||^2]`` (gallery)."""
    v = x.astype(work) - work(center)  # exact: small integers
    norm = np.einsum("ij,ij->i", v, v)[:, None]  # exact: <= l M^2, within the bound above
    ones = np.ones_like(norm)
    return np.concatenate([-2 * v, ones, norm] if norm_first else [v, norm, ones], axis=1)


@sqeuclidean_kernel.override("jax", supports="every input (lax.dot_general, integer accumulation)")
def _sqeuclidean_jax(F: Any, D: Any, *, center: int, dtype: str) -> Any:
    return _sqeuclidean_jax_compiled(center, dtype)(F, D)


@functools.lru_cache(maxsize=32)
def _sqeuclidean_jax_compiled(center: int, dtype: str) -> Any:
    """JAX: the cross term as ``lax.dot_general`` of the centered features in the signed type of
    their width (int8 for uint8/int8, int16, int32) accumulated in W
    (``preferred_element_type``): for 8-bit features and W = int32 that is XLA's int8 x int8 ->
    int32 GEMM (IMMA tensor cores on a GPU). Same bounds as the portable version, same bits."""
    import jax.numpy as jnp
    from jax import lax

    wide = jnp.dtype(dtype)

    def run(F: Any, D: Any) -> Any:
        narrow = {1: jnp.int8, 2: jnp.int16, 4: jnp.int32}[F.dtype.itemsize]
        # uint8 - 128 is in [-128, 127] and uint16 - 32768 in [-32768, 32767]: the cast is exact.
        f = (F.astype(jnp.int32) - center).astype(narrow)
        d = (D.astype(jnp.int32) - center).astype(narrow)
        # XLA:GPU's int8 GEMM (jax 0.11, H100) returned wrong sums for 114 of 300 random shapes
        # whose feature length was not a multiple of 4, and none after padding it with zeros
        # (which add nothing to f.d): pad it.
        pad = -f.shape[1] % 4
        fp, dp = (jnp.pad(f, ((0, 0), (0, pad))), jnp.pad(d, ((0, 0), (0, pad)))) if pad else (f, d)
        cross = _require(
            lax.dot_general(fp, dp, (((1,), (1,)), ((), ())), preferred_element_type=wide), dtype)
        fw, dw = _require(f.astype(wide), dtype), d.astype(wide)
        nf = jnp.sum(fw * fw, axis=1, dtype=wide)
        nd = jnp.sum(dw * dw, axis=1, dtype=wide)
        return (nf[:, None] + nd[None, :]) - 2 * cross

    return jit(run)



# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
#: The metrics :func:`cdist` computes (exact ones only).
METRICS = ("sqeuclidean",)


def sqeuclidean(F: Any, D: Any) -> Any:
    """Pairwise squared Euclidean distances of integer feature vectors, exactly.

    Lin et al.'s eq. (3), the pairwise-distance step of their video analysis (Table 3):
    ``P[i, j] = sum_k (F[i, k] - D[j, k])**2``.

    Parameters
    ----------
    F : (m, l) array of uint8, int8, uint16, int16 or int32
        Extracted feature vectors, one per row (any backend's array; the result is on the
        active backend). Float features are refused: quantize them with
        :func:`quantize_features`.
    D : (n, l) array of F's dtype
        The database (gallery) of feature vectors.

    Returns
    -------
    P : (m, n) int32 or int64 array
        int32 when ``l * range**2 <= 2**31 - 1`` (``range`` = 255 for 8-bit features: up to
        ``l = 33,025``), else int64; decided from the dtype and ``l`` only. int32 features give
        int64 and must satisfy ``l * (max - min)**2 < 2**63`` over both arrays (checked).

    Notes
    -----
    No rounding: every backend returns the exact integers, so every backend has the same bits
    and the result equals ``scipy.spatial.distance.cdist(F, D, "sqeuclidean")`` (float64, whose
    values here are all exact below 2**53) and OpenCV's ``BFMatcher(NORM_L2SQR)`` distances.
    The computation is ``||f||^2 + ||d||^2 - 2 f.d`` with unsigned features shifted to signed
    ones first (differences are unchanged); the bounds that keep it exact are written next to
    each implementation in ``src/portcv/distance/_sqeuclidean.py``.

    References
    ----------
    D. Lin et al., "The Parallelization of Video Processing", IEEE Signal Processing Magazine,
    2009, eq. (3).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> F = np.array([[0, 0], [3, 4]], np.uint8)
    >>> D = np.array([[0, 0], [255, 255], [3, 0]], np.uint8)
    >>> portcv.to_numpy(portcv.distance.sqeuclidean(F, D))
    array([[     0, 130050,      9],
           [    25, 126505,     16]], dtype=int32)
    """
    F, D, params = check_pair(F, D)
    return sqeuclidean_kernel(F, D, **params)


def cdist(F: Any, D: Any, metric: str) -> Any:
    """SciPy-shaped pairwise distances: ``cdist(F, D, "sqeuclidean")`` is :func:`sqeuclidean`.

    The arguments are those of ``scipy.spatial.distance.cdist(XA, XB, metric)``; only exact
    metrics are offered, so ``metric`` has no default (SciPy's default, ``"euclidean"``, needs
    a square root that would not give the same bits on every backend).

    Parameters
    ----------
    F : (m, l) integer array
        As in :func:`sqeuclidean` (SciPy's ``XA``).
    D : (n, l) integer array
        As in :func:`sqeuclidean` (SciPy's ``XB``).
    metric : {'sqeuclidean'}
        The distance.

    Returns
    -------
    (m, n) int32 or int64 array, as :func:`sqeuclidean`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> F = np.array([[1, 2, 3]], np.int16)
    >>> portcv.to_numpy(portcv.distance.cdist(F, F - 1, "sqeuclidean"))
    array([[3]])
    """
    if not isinstance(metric, str) or metric not in METRICS:
        hint = (": euclidean distances are square roots, which no two backends round alike; use "
                "'sqeuclidean'" if metric == "euclidean" else "")
        raise ValueError(f"metric must be one of {METRICS} (exact metrics only), got {metric!r}{hint}")
    return sqeuclidean(F, D)
