"""Float feature vectors to the integer features the exact distances take.

``q = round_half_even(x * scale)``, computed in float64: one IEEE multiplication (nothing for
FMA contraction or reassociation to change) and one rounding, so every backend gives the same
integers. Values that do not fit the target dtype, NaN and infinity are refused, never clipped.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import asarray, backend, owner_of

#: Integer dtypes :func:`quantize_features` makes, with their value ranges.
QUANTIZED_DTYPES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767)}
#: Largest scale: a denormal input (|x| < 2**-126, which XLA and GPUs may flush to zero) times
#: at most 2**64 stays below 2**-62 and rounds to 0 either way, so flushing cannot change a bit.
MAX_SCALE = 2.0**64


@kernel("quantize_features")
def quantize_features_kernel(xp: Any, x: Any, *, scale: float) -> Any:
    """Portable ``round_half_even(float64(x) * scale)`` (float64; float32 -> float64 is exact)."""
    return xp.round(xp.astype(x, xp.float64) * scale)


def quantize_features(x: Any, scale: float, *, dtype: str = "uint8") -> Any:
    """Quantize float feature vectors to integers: ``round_half_even(x * scale)``.

    The exact distances (:func:`sqeuclidean`, :func:`nearest`) take integer features only;
    this is the documented way in for float descriptors.

    Parameters
    ----------
    x : array of float32 or float64
        Features of any shape (any backend's array; the result is on the active backend).
    scale : float
        Multiplier, ``0 < scale <= 2**64``: one that maps the values into ``dtype`` (255 for
        features in [0, 1] and uint8, say).
    dtype : {'uint8', 'int8', 'uint16', 'int16'}
        The integer type of the result.

    Returns
    -------
    array of x's shape and ``dtype``.

    Raises
    ------
    ValueError
        If a value of ``round(x * scale)`` is outside ``dtype``'s range, or ``x`` holds NaN or
        infinity (nothing is clipped). The check reads the minimum and maximum back to the host.

    Notes
    -----
    ``x`` is converted to float64 (exact), multiplied by ``scale`` (one correctly rounded IEEE
    multiplication) and rounded half to even (``np.rint``): the same bits on every backend.
    Values halfway between integers go to the even one, so ``0.5 -> 0`` and ``1.5 -> 2``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> x = np.array([[0.125, 0.375, 0.625, 0.7]], np.float32)
    >>> portcv.to_numpy(portcv.distance.quantize_features(x, 4))      # 0.5, 1.5, 2.5, 2.8
    array([[0, 2, 2, 3]], dtype=uint8)
    """
    if owner_of(x) is None:
        raise TypeError(f"x must be an array (NumPy, CuPy or JAX), got {type(x).__name__}")
    kind = np.dtype(x.dtype)
    if kind not in (np.dtype(np.float32), np.dtype(np.float64)):
        what = "; integer features need no quantization" if kind.kind in "iub" else ""
        raise TypeError(f"x must have dtype float32 or float64, got {kind}{what}")
    if 0 in tuple(x.shape):
        raise ValueError(f"x must not be empty, got shape {tuple(x.shape)}")
    if math.prod(x.shape) > _validate.MAX_ELEMENTS:
        raise ValueError(f"x has {math.prod(x.shape)} elements; at most {_validate.MAX_ELEMENTS} are supported")
    scale = _validate.real(scale, "scale", positive=True, high=MAX_SCALE)
    dtype = _validate.choice(dtype, "dtype", QUANTIZED_DTYPES)
    x = asarray(x)
    q = quantize_features_kernel(x, scale=scale)
    xp = backend().xp
    lo_q, hi_q = float(xp.min(q)), float(xp.max(q))
    low, high = QUANTIZED_DTYPES[dtype]
    if np.isnan(lo_q) or np.isnan(hi_q):
        raise ValueError("x holds NaN: features must be finite numbers")
    if not (low <= lo_q and hi_q <= high):
        raise ValueError(
            f"x * scale rounds to values in [{lo_q:g}, {hi_q:g}], outside {dtype}'s [{low}, {high}] (values are "
            "not clipped): choose a smaller scale, another dtype, or clip x yourself")
    return xp.astype(q, getattr(xp, dtype))

