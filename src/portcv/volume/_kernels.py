"""Integer kernels for :func:`convolve3d`: quantization of real kernels and spatio-temporal Gabor
banks. Host code in float64 (NumPy); the taps are then static parameters of the convolution."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate


def quantize_kernel(kernel: Any, *, bits: int = 16) -> tuple[np.ndarray, int]:
    """Real-valued taps -> integer taps and the ``shift`` that undoes their scale.

    ``taps = round(kernel * 2**shift)`` (round half to even) with the largest ``shift`` (0..30)
    that keeps ``sum|taps|`` at most about ``2**bits``; then ``convolve3d(video, taps,
    shift=shift)`` approximates the real convolution to within one unit after its rounding.
    When ``kernel.sum() * 2**shift`` is an integer (a smoothing kernel summing to 1, a
    zero-mean filter), the taps are corrected to sum to it exactly: the difference goes, one unit
    each, to the taps whose rounding moved them furthest the other way, so flat video stays flat
    (or gives exactly 0).

    Parameters
    ----------
    kernel : array_like of float, 3-D (kt, kh, kw) or a bank (F, kt, kh, kw)
        Finite real values (any backend's array; complex ones are refused). A bank shares one
        shift (the one its largest ``sum|k|`` allows).
    bits : int
        1..23. With ``bits <= 16``, ``sum|taps| * 255 < 2**24``: uint8 video runs the float32
        paths (FFMA on CUDA, XLA's convolution on JAX).

    Returns
    -------
    (taps, shift) : (int32 array of the kernel's shape, int)

    Examples
    --------
    >>> import numpy as np, portcv
    >>> box = np.full((3, 3, 3), 1 / 27)
    >>> taps, shift = portcv.volume.quantize_kernel(box, bits=12)
    >>> shift, int(taps.sum()) == 2**shift      # sums to exactly 1.0 in Q(shift)
    (12, True)
    """
    bits = _validate.integer(bits, "bits", low=1, high=23)
    k = _validate.real_array(kernel, "kernel")  # complex taps refused, not silently made real
    if k.ndim not in (3, 4) or k.size == 0:
        raise ValueError(f"kernel must be a non-empty 3-D kernel or a 4-D bank, got shape {k.shape}")
    if not np.all(np.isfinite(k)):
        raise ValueError("kernel must hold finite values")
    bank = k.reshape((-1,) + k.shape[-3:])
    l1 = float(np.abs(bank).sum(axis=(1, 2, 3)).max())
    shift = 0 if l1 == 0 else min(30, max(0, math.floor(bits - math.log2(l1))))
    scaled = bank * 2.0**shift
    taps = np.rint(scaled)
    for f in range(bank.shape[0]):
        # The sum of the scaled taps (fsum: correctly rounded) is "an integer" up to the float
        # rounding of the user's kernel, which grows with the taps' magnitude: a kernel divided
        # by its own sum sums to 1 within a few ulps, that is 1e-7 units at shift 30.
        target = math.fsum(scaled[f].ravel())
        if abs(target - round(target)) > 1e-9 + 1e-12 * float(np.abs(scaled[f]).sum()):
            continue
        diff = int(round(target) - taps[f].sum())  # how many units the rounding lost (or gained)
        if diff:
            flat, error = taps[f].ravel(), (scaled[f] - taps[f]).ravel()
            order = np.argsort(-np.sign(diff) * error, kind="stable")[: abs(diff)]
            flat[order] += np.sign(diff)
            taps[f] = flat.reshape(taps[f].shape)
    if np.abs(taps).max(initial=0) >= 2**31:
        raise ValueError("kernel: its taps do not fit int32 at shift 0; scale it down first")
    return taps.astype(np.int32).reshape(k.shape), shift


#: Lengths of a Gabor filter (pixels, frames) are in [MIN_LENGTH, MAX_LENGTH]: beyond them its
#: float64 envelope overflows (sigma**2) or divides 0 by 0, and no 31-tap kernel resolves them.
MIN_LENGTH, MAX_LENGTH = 1e-6, 1e6


def _length(value: Any, name: str) -> float:
    length = _validate.real(value, name, positive=True, high=MAX_LENGTH)
    if length < MIN_LENGTH:
        raise ValueError(f"{name} must be >= {MIN_LENGTH}, got {length}")
    return length


def gabor_kernel3d(
    ksize: Any,
    sigma: float,
    wavelength: float,
    *,
    theta: Any = 0.0,
    speed: Any = 0.0,
    phase: float = 0.0,
    sigma_time: float | None = None,
    zero_mean: bool = True,
    bits: int = 16,
) -> tuple[np.ndarray, int]:
    """Integer spatio-temporal Gabor filters (one, or a bank over ``theta`` x ``speed``).

    ``g(t, y, x) = exp(-(x^2 + y^2) / (2 sigma^2) - t^2 / (2 sigma_time^2))
    * cos(2 pi (x cos(theta) + y sin(theta) - speed * t) / wavelength + phase)``: a grating of
    ``wavelength`` pixels across direction ``theta`` that moves ``speed`` pixels per frame along
    it, under a Gaussian envelope. Such banks (orientations x speeds) are the spatio-temporal
    features of biologically inspired action recognition that Lin et al.'s article names as the
    use of 3-D convolution. Built in float64 and quantized by :func:`quantize_kernel`.

    Parameters
    ----------
    ksize : int or (kt, kh, kw)
        Odd sizes, 1..31.
    sigma, wavelength : float
        Spatial standard deviation and wavelength in pixels, in [1e-6, 1e6].
    theta : float or sequence of float
        Direction(s) of the grating's normal in radians (x right, y down).
    speed : float or sequence of float
        Velocity (pixels per frame) of the grating along ``theta``.
    phase : float
        Phase offset in radians (0: even, symmetric filter; pi/2: odd).
    sigma_time : float, optional
        Temporal standard deviation in frames, in [1e-6, 1e6] (default ``kt / 4``).
    zero_mean : bool
        Subtract the envelope times the kernel's mean response, so that flat video gives 0
        (the integer taps then sum to exactly 0, see :func:`quantize_kernel`).
    bits : int
        Passed to :func:`quantize_kernel`.

    Returns
    -------
    (taps, shift) : int32 taps of shape ``(kt, kh, kw)``, or ``(len(theta) * len(speed), kt, kh,
    kw)`` (theta-major) when either is a sequence; the shift shared by the bank.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> bank, shift = portcv.volume.gabor_kernel3d(7, 2.0, 6.0, theta=[0, np.pi / 2], speed=[-1, 1])
    >>> bank.shape, int(bank.sum())
    ((4, 7, 7, 7), 0)
    """
    if isinstance(ksize, (tuple, list)):
        if len(ksize) != 3:
            raise ValueError(f"ksize must be an int or (kt, kh, kw), got {ksize!r}")
        sides = tuple(_validate.integer(s, "ksize", low=1, high=31) for s in ksize)
    else:
        sides = (_validate.integer(ksize, "ksize", low=1, high=31),) * 3
    if any(s % 2 == 0 for s in sides):
        raise ValueError(f"ksize must be odd, got {ksize!r}")
    sigma = _length(sigma, "sigma")
    wavelength = _length(wavelength, "wavelength")
    phase = _validate.real(phase, "phase")
    sigma_t = sides[0] / 4 if sigma_time is None else _length(sigma_time, "sigma_time")
    thetas = [_validate.real(t, "theta") for t in np.atleast_1d(np.asarray(theta, dtype=object))]
    speeds = [_validate.real(v, "speed") for v in np.atleast_1d(np.asarray(speed, dtype=object))]
    for values, given, label in ((thetas, theta, "theta"), (speeds, speed, "speed")):
        if not values:
            raise ValueError(f"{label} must be a number or a non-empty sequence of numbers, got {given!r}")
    zero_mean = _validate.boolean(zero_mean, "zero_mean")
    is_bank = np.ndim(theta) > 0 or np.ndim(speed) > 0
    t, y, x = np.meshgrid(*(np.arange(s, dtype=np.float64) - s // 2 for s in sides), indexing="ij")
    envelope = np.exp(-(x**2 + y**2) / (2 * sigma**2) - t**2 / (2 * sigma_t**2))
    filters = []
    for th in thetas:
        for v in speeds:
            g = envelope * np.cos(2 * np.pi * (x * np.cos(th) + y * np.sin(th) - v * t) / wavelength + phase)
            if zero_mean:
                g = g - envelope * (g.sum() / envelope.sum())
            filters.append(g)
    bank = np.stack(filters)
    taps, shift = quantize_kernel(bank if is_bank else bank[0], bits=bits)
    if zero_mean:
        taps = _zero_sum(taps)
    return taps, shift


def _zero_sum(taps: np.ndarray) -> np.ndarray:
    """Make each kernel of ``taps`` sum to exactly 0 (a zero-mean filter's float sum is only ~0,
    so quantize_kernel's correction may not apply): move the rounding residue to the largest taps."""
    bank = taps.reshape((-1,) + taps.shape[-3:]).astype(np.int64)
    for f in range(bank.shape[0]):
        flat = bank[f].ravel()
        diff = int(flat.sum())
        if diff:
            order = np.argsort(-np.abs(flat), kind="stable")[: abs(diff)]
            flat[order] -= np.sign(diff)
            bank[f] = flat.reshape(bank[f].shape)
    return bank.astype(np.int32).reshape(taps.shape)
