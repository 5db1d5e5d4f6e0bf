"""Exact local binary patterns: circular (P, R) neighbourhoods in decimal fixed point.

Ojala et al.'s operator (Ojala, Pietikäinen & Mäenpää 2002) as scikit-image samples it: point i
of P sits at ``(round(-R sin(2 pi i / P), 5), round(R cos(2 pi i / P), 5))`` (rows, columns) from
the centre, its value is the bilinear interpolation of the four pixels around it, and bit i
(weight ``2**i``) is set when that value is >= the centre. scikit-image evaluates the bilinear
value in float64; the real number it means has denominator ``10**10`` (two 5-decimal weights),
so portcv evaluates it *exactly*: with ``S = 10**5`` and the point's offsets split into integer
parts and 5-decimal fractions ``wr, wc`` (integers in [0, S)), the four pixel weights are the
integers ``(S - wr)(S - wc), (S - wr) wc, wr (S - wc), wr wc`` (sum ``S**2``) and

    bit = ``TL (S-wr)(S-wc) + TR (S-wr) wc + BL wr (S-wc) + BR wr wc  >=  centre * S**2``.

Every product and partial sum is an integer below ``255 * 10**10 < 2**42``, so float64 holds it
exactly whatever the summation order or FMA contraction: every backend gets the same bits, and
they are scikit-image's except where the two sides are exactly equal in the reals (there its
float64 rounding decides either way). Points on the pixel grid (``wr = wc = 0``) compare the
pixel with the centre directly.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _border, _validate
from .._kernel import kernel
from ..backends import require_dtype

#: The decimal fixed-point scale of a sample point's offset (scikit-image rounds to 5 decimals).
SCALE = 10**5
#: Mappings of the P-bit codes to labels (scikit-image's methods, plus Ahonen's ``"u2"``).
METHODS = ("default", "ror", "uniform", "nri_uniform", "u2")
#: Border rules of :func:`local_binary_pattern`.
LBP_BORDERS = ("constant", "valid")
#: Largest P: the label tables have 2**P entries.
MAX_POINTS = 16
#: Largest radius accepted (a sanity bound; the image is padded by ceil(R)).
MAX_RADIUS = 64.0


def check_pr(P: Any, R: Any) -> tuple[int, float]:
    P = _validate.integer(P, "P", low=1, high=MAX_POINTS)
    R = _validate.real(R, "R", positive=True, high=MAX_RADIUS)
    return P, R


@functools.lru_cache(maxsize=64)
def sample_offsets(P: int, R: float) -> tuple[tuple[int, int, int, int], ...]:
    """Per point, ``(r0, c0, wr, wc)``: the integer offsets of its top-left pixel and its
    5-decimal fractions (integers in ``[0, SCALE)``) below and to the right of it.

    The offsets are scikit-image's (``np.round(., 5)`` of float64 sines and cosines), read as the
    decimals they print as (``rint(offset * 10**5)``): exact integers from here on.
    """
    angles = 2 * np.pi * np.arange(P, dtype=np.float64) / P
    rp = np.round(-R * np.sin(angles), 5)
    cp = np.round(R * np.cos(angles), 5)
    points = []
    for kr, kc in zip(np.rint(rp * SCALE).astype(np.int64), np.rint(cp * SCALE).astype(np.int64)):
        r0, wr = divmod(int(kr), SCALE)  # floor division: wr in [0, SCALE)
        c0, wc = divmod(int(kc), SCALE)
        points.append((r0, c0, wr, wc))
    return tuple(points)


@functools.lru_cache(maxsize=64)
def sample_terms(P: int, R: float) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """Per point, its ``(dy, dx, weight)`` terms with non-zero integer weight (sum ``SCALE**2``)."""
    points = []
    for r0, c0, wr, wc in sample_offsets(P, R):
        terms = []
        for dy, fy in ((r0, SCALE - wr), (r0 + 1, wr)):
            for dx, fx in ((c0, SCALE - wc), (c0 + 1, wc)):
                if fy * fx:
                    terms.append((dy, dx, fy * fx))
        points.append(tuple(terms))
    return tuple(points)


def reach(P: int, R: float) -> int:
    """The farthest row/column offset any sample reads (at most ceil(R))."""
    return max(max(abs(dy), abs(dx)) for terms in sample_terms(P, R) for dy, dx, _ in terms)


def bin_count(P: int, method: str) -> int:
    """Number of labels ``method`` gives for P points (the histogram length)."""
    if method in ("default", "ror"):
        return 1 << P
    if method == "uniform":
        return P + 2
    return P * (P - 1) + 3


@functools.lru_cache(maxsize=32)
def mapping_table(P: int, method: str) -> np.ndarray:
    """The label of every P-bit code (bit i = point i), as a ``2**P`` uint16 lookup table.

    * ``default``: the code itself.
    * ``ror``: the smallest of the code's P circular rotations (rotation invariant).
    * ``uniform`` (riu2): the number of ones of a uniform code, ``P + 1`` otherwise.
    * ``nri_uniform``: scikit-image's numbering: 0 = no ones, ``1 + (ones - 1) P + rotation`` for
      the other uniform codes, ``P (P - 1) + 1`` = all ones, ``P (P - 1) + 2`` = non-uniform.
    * ``u2`` (Ahonen et al.): uniform codes numbered 0, 1, ... in ascending code order, every
      non-uniform code in the last label (59 labels for P = 8, 243 for P = 16).

    A code is uniform when it has at most two 0/1 transitions. scikit-image counts them over
    the P - 1 neighbouring pairs without the wrap-around pair; the circular count is even, so
    "at most 2" is the same test either way.
    """
    codes = np.arange(1 << P, dtype=np.int64)
    bits = (codes[:, None] >> np.arange(P)) & 1  # (2**P, P)
    if method == "default":
        return codes.astype(np.uint16)
    if method == "ror":
        mask = (1 << P) - 1
        rotations = [((codes >> s) | (codes << (P - s))) & mask for s in range(P)]
        return np.min(np.stack(rotations), axis=0).astype(np.uint16)
    changes = np.sum(bits[:, :-1] != bits[:, 1:], axis=1)
    uniform = changes <= 2
    ones = bits.sum(axis=1)
    if method == "uniform":
        return np.where(uniform, ones, P + 1).astype(np.uint16)
    if method == "u2":
        numbers = np.cumsum(uniform) - 1  # uniform codes numbered in ascending order
        return np.where(uniform, numbers, int(uniform.sum())).astype(np.uint16)
    # nri_uniform: the rotation index is where the run of ones starts (scikit-image's rule:
    # P - first_one, or ones - first_zero when bit 0 is set, i.e. the run wraps around).
    first_one = np.argmax(bits == 1, axis=1)
    first_zero = np.argmax(bits == 0, axis=1)
    rotation = np.where(first_one == 0, ones - first_zero, P - first_one)
    label = 1 + (ones - 1) * P + rotation
    label = np.where(ones == 0, 0, np.where(ones == P, P * (P - 1) + 1, label))
    return np.where(uniform, label, P * (P - 1) + 2).astype(np.uint16)


@kernel("local_binary_pattern")
def lbp_kernel(xp: Any, image: Any, *, P: int, R: float, method: str, border: str) -> Any:
    """Portable LBP labels of a uint8 ``(..., H, W)`` image (see the module docstring).

    ``border="constant"``: zero padding, full-size output (scikit-image's 'C' mode);
    ``"valid"``: only the centres whose samples lie inside, ``(H - 2c) x (W - 2c)``,
    ``c = ceil(R)``. Returns uint16 labels.
    """
    points = sample_terms(P, R)
    H, W = image.shape[-2], image.shape[-1]
    if border == "constant":
        pad = reach(P, R)
        src = image
        for axis in (-2, -1):
            src = _border.pad_axis(xp, src, axis, pad, pad, "constant", 0)
        origin, Ho, Wo = pad, H, W
    else:
        c = math.ceil(R)
        src, origin, Ho, Wo = image, c, H - 2 * c, W - 2 * c
    centre = image if border == "constant" else image[..., origin:origin + Ho, origin:origin + Wo]
    wide = None  # the float64 copy, made once if any point falls between pixels
    centre_scaled = None
    code = xp.zeros(centre.shape, dtype=xp.int32)
    for i, terms in enumerate(points):
        def shifted(a: Any, dy: int, dx: int) -> Any:
            return a[..., origin + dy:origin + dy + Ho, origin + dx:origin + dx + Wo]

        if len(terms) == 1:  # a grid point: the pixel itself
            dy, dx, _ = terms[0]
            bit = shifted(src, dy, dx) >= centre
        else:
            if wide is None:
                # float64 is what makes the sums exact; JAX without x64 would silently use float32
                wide = require_dtype(xp.astype(src, xp.float64), "float64", "portcv.recognize.local_binary_pattern")
                centre_scaled = xp.astype(centre, xp.float64) * float(SCALE * SCALE)
            value = None
            for dy, dx, weight in terms:  # integers < 2**42: exact in float64 in any order
                term = shifted(wide, dy, dx) * float(weight)
                value = term if value is None else value + term
            bit = value >= centre_scaled
        code = code + xp.astype(bit, xp.int32) * (1 << i)
    if method != "default":
        lut = xp.asarray(mapping_table(P, method))
        labels = xp.take(lut, xp.reshape(code, (-1,)))
        return xp.reshape(labels, code.shape)
    return xp.astype(code, xp.uint16)


#: Output pixels per band of the NumPy override: its float64 temporaries (256 KiB) stay in cache.
BAND_PIXELS = 1 << 15


@lbp_kernel.override("numpy", supports="every input (bands of rows on the host thread pool)")
def _lbp_numpy(image: Any, *, P: int, R: float, method: str, border: str) -> Any:
    """The portable version on bands of about :data:`BAND_PIXELS` output pixels, spread over
    the NumPy backend's threads. Measured on 2 cores: a batch of 64 faces of 130 x 150 took 5x
    longer in one piece (9 MB float64 temporaries per step) than face by face. A zero-padded
    image read with ``border="valid"`` is the ``"constant"`` result (the padding, ceil(R), covers
    every sample), so each band is the valid LBP of its rows plus ceil(R) halo rows."""
    from ..backends import backend
    from ..backends.numpy import row_bands, run_bands

    c = math.ceil(R)
    if border == "constant":
        image = np.pad(image, [(0, 0)] * (image.ndim - 2) + [(c, c), (c, c)])
    lead = image.shape[:-2]
    frames = image.reshape((-1,) + image.shape[-2:])
    Ho, Wo = frames.shape[1] - 2 * c, frames.shape[2] - 2 * c
    out = np.empty((frames.shape[0], Ho, Wo), np.uint16)
    xp = backend().xp

    def band(item: tuple[int, int, int]) -> None:
        f, y0, y1 = item
        out[f, y0:y1] = lbp_kernel.portable(xp, frames[f, y0:y1 + 2 * c], P=P, R=R, method=method, border="valid")

    run_bands(band, row_bands(Ho, Wo, planes=frames.shape[0], target=BAND_PIXELS))
    return out.reshape(lead + (Ho, Wo))


def local_binary_pattern(image: Any, P: int, R: float, *, method: str = "default", border: str = "constant",
                         channel_axis: Any = "auto") -> Any:
    """Local binary pattern labels of a gray image, exact on every backend.

    scikit-image's ``skimage.feature.local_binary_pattern`` (same sample points, same bit order,
    same methods), computed in decimal fixed point instead of float64 so that every backend
    returns the same bits (Ojala, Pietikäinen & Mäenpää 2002; the LBP stage of Tek's GPU face
    recognizer, section 2.2).

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray image or a batch of them (leading axes), any backend's array.
    P : int
        Number of circular sample points, 1 to 16 (bit i has weight ``2**i``).
    R : float
        Radius of the circle, > 0 (at most 64).
    method : {'default', 'ror', 'uniform', 'nri_uniform', 'u2'}
        Label mapping (see Notes). ``'u2'`` is Ahonen et al.'s uniform numbering used by
        :func:`lbp_histograms`; the others are scikit-image's ('var' is not provided).
    border : {'constant', 'valid'}
        ``'constant'``: pixels outside the image are 0 and the output has the image's size
        (scikit-image's behaviour). ``'valid'``: only centres whose samples all lie inside,
        an ``(H - 2c, W - 2c)`` output with ``c = ceil(R)`` (OpenCV's and Ahonen's interior).
    channel_axis : {'auto', None}
        ``'auto'``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: the leading axes are a batch.

    Returns
    -------
    labels : (..., H', W') uint16 array
        On the active backend. scikit-image returns the same numbers as float64.

    Notes
    -----
    Sample i is at ``(round(-R sin(2 pi i/P), 5), round(R cos(2 pi i/P), 5))``. Its bilinear
    value ``v`` is compared with the centre ``g`` as the integer inequality
    ``sum_k w_k X_k >= g 10**10`` (``w_k`` the four products of the 5-decimal weights): exact,
    since every term is below ``2**42``. scikit-image computes ``v - g >= 0`` in float64, which
    agrees except when ``v == g`` exactly in the reals and its rounding lands below (measured:
    0 such pixels at (8, 1), about 0.06 % of bits at (8, 2) on natural images).

    Mappings: ``'default'`` the code; ``'ror'`` the smallest rotation; ``'uniform'`` the number
    of ones of a uniform code (at most two 0/1 transitions), ``P + 1`` otherwise;
    ``'nri_uniform'`` scikit-image's numbering of the ``P (P - 1) + 2`` uniform codes, non-uniform
    ``P (P - 1) + 2``; ``'u2'`` uniform codes numbered in ascending code order, non-uniform last
    (59 labels for P = 8, 243 for P = 16). scikit-image counts transitions without the
    wrap-around pair; the circular count is even, so "at most 2" means the same.

    References
    ----------
    T. Ojala, M. Pietikäinen, T. Mäenpää, "Multiresolution gray-scale and rotation invariant
    texture classification with local binary patterns", IEEE TPAMI 24(7), 2002,
    doi:10.1109/TPAMI.2002.1017623. S. C. Tek, "Fast face detection and recognition on graphics
    processing units", M.Sc. thesis, Istanbul Technical University, 2012, section 2.2.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> image = np.array([[5, 5, 5], [5, 4, 9], [0, 0, 0]], np.uint8)
    >>> portcv.to_numpy(portcv.recognize.local_binary_pattern(image, 4, 1))
    array([[ 9,  5, 12],
           [ 2,  7,  0],
           [15, 15, 15]], dtype=uint16)
    """
    image = _validate.image(image, "image")
    _validate.gray(image, "image", channel_axis)
    P, R = check_pr(P, R)
    method = _validate.choice(method, "method", METHODS)
    border = _validate.choice(border, "border", LBP_BORDERS)
    if border == "valid":
        c = math.ceil(R)
        H, W = image.shape[-2], image.shape[-1]
        if H <= 2 * c or W <= 2 * c:
            raise ValueError(f"image of shape {tuple(image.shape)} has no pixel whose samples at R={R} lie "
                             f"inside (border='valid' needs H and W > 2 ceil(R) = {2 * c})")
    return lbp_kernel(image, P=P, R=R, method=method, border=border)
