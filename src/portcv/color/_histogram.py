"""Histogram, global thresholds and binarization kernels: the Webcam Streaming & Filters report's section 8.

The report binarizes a frame in five steps (section 8): gray, histogram (8.2), the two largest
bins (8.3), their mean as the threshold (8.4), ``> threshold`` to 255 (8.5). Each step is a
kernel here, working on every frame of a batch at once and keeping every intermediate (the
histograms, the thresholds) on the device, so a pipeline never waits for the host.

* ``histogram``: exact counts per frame (and channel). Portable: one stable sort of per-frame
  keys and a ``searchsorted`` of every key value (memory O(pixels), never pixels x bins; NumPy
  sorts uint8/uint16 keys with a radix sort). JAX on a GPU, one channel: a Pallas kernel that
  counts 256 pixels per step as an int8 one-hot matrix product on the tensor cores
  (``_histogram_pallas.pallas_histogram``); otherwise an integer scatter-add (XLA sorts slowly on the CPU)
  into up to 256 copies of the counters, summed after, so that neighbouring pixels' GPU atomics
  do not contend. CuPy (``_histogram_cuda.py``): ``_histogram_cuda.cu``, per-warp shared-memory
  sub-histograms merged with one 64-bit atomic per bin per block (integer atomics commute, so
  the counts are exact in any order).
* ``threshold_two_peaks``: the report's two-maxima rule, with its three readings (see
  :data:`RULES`). Portable vectorized closed forms (the GPU rule replays its tree reduction);
  CuPy transcribes the loops, one thread per histogram.
* ``threshold_otsu``: OpenCV's ``getThreshVal_Otsu`` in the same IEEE double operations in the
  same order (where two thresholds have exactly equal variance, OpenCV's rounding picks the
  winner, so an exact integer formulation would differ there). NumPy (the portable version) rounds every operation; the JAX
  override runs the 256 steps in ``lax.scan`` and pins each product's rounding so XLA cannot
  contract ``a*b + c`` into an FMA; CuPy uses ``__dmul_rn``-style intrinsics.
* ``binarize``: ``255 if pixel > threshold else 0`` with a threshold per frame (and channel).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import asarray, backend, owner_of
from ..backends.jax import jit

#: Bin counts a histogram may have: the divisors of 256 (bin = value * bins // 256).
BINS = tuple(1 << k for k in range(9))
#: Readings of the report's two-maxima threshold (section 8.3), see ``portcv.color.threshold_two_peaks``.
RULES = ("two_largest", "report_cpu", "report_gpu")
#: FLT_EPSILON (2^-23) as OpenCV's Otsu compares it, promoted to double.
FLT_EPSILON = 2.0**-23


def _shape_parts(shape: tuple, has_channels: bool) -> tuple[tuple, int, int]:
    """(leading axes, pixels per frame, channels) of an ``(..., H, W[, C])`` shape."""
    if has_channels:
        return shape[:-3], shape[-3] * shape[-2], shape[-1]
    return shape[:-2], shape[-2] * shape[-1], 1


# --------------------------------------------------------------------------------------------
# histogram
# --------------------------------------------------------------------------------------------
@kernel("histogram")
def histogram_kernel(xp: Any, img: Any, *, bins: int, has_channels: bool) -> Any:
    """Counts (int64) of ``value >> (8 - log2 bins)`` per frame and channel: sort, then search."""
    lead, pixels, channels = _shape_parts(tuple(img.shape), has_channels)
    frames = math.prod(lead)
    n_keys = frames * channels * bins
    shift = 8 - (bins.bit_length() - 1)
    # key = (frame * channels + channel) * bins + bin: the sort groups every (frame, channel, bin).
    # The narrowest key type that holds n_keys - 1 keeps NumPy on its radix sort (8/16-bit keys).
    key_dtype = xp.uint8 if n_keys <= 2**8 else xp.uint16 if n_keys <= 2**16 else xp.int32 if n_keys <= 2**31 else xp.int64
    key = xp.astype(img >> shift, key_dtype) if shift else xp.astype(img, key_dtype)
    if n_keys > bins:
        key = xp.reshape(key, (frames, pixels, channels))
        # Offsets are built in int64 (no Python-scalar overflow) and fit key_dtype: < n_keys.
        base = (xp.reshape(xp.arange(frames, dtype=xp.int64) * (channels * bins), (frames, 1, 1))
                + xp.reshape(xp.arange(channels, dtype=xp.int64) * bins, (1, 1, channels)))
        key = key + xp.astype(base, key_dtype)
    key = xp.sort(xp.reshape(key, (-1,)), stable=True)
    # upto[k] = #(key <= k); the counts are its first differences.
    upto = xp.astype(xp.searchsorted(key, xp.arange(n_keys, dtype=key_dtype), side="right"), xp.int64)
    counts = xp.concat([upto[:1], upto[1:] - upto[:-1]])
    return xp.reshape(counts, lead + ((channels, bins) if has_channels else (bins,)))


#: Pixels (times channels) per band of the compiled histogram (``_histogram_numba.py``), each
#: band counted into its own counts and the bands' counts summed: a 1080p gray frame is 8 bands.
NUMBA_BAND_PIXELS = 1 << 18


@histogram_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _histogram_numpy(img: Any, *, bins: int, has_channels: bool) -> Any:

    if img.dtype != np.uint8:
        return histogram_kernel.portable(backend().xp, img, bins=bins, has_channels=has_channels)
    from ..backends.numpy import compiled

    lead, pixels, channels = _shape_parts(tuple(img.shape), has_channels)
    frames = math.prod(lead)
    x = np.reshape(img, (frames, pixels * channels))
    if compiled():
        from ..backends.numpy import run_bands
        from ._histogram_numba import count_band

        step = max(1, NUMBA_BAND_PIXELS // channels)  # pixels per band
        items = [(f, p) for f in range(frames) for p in range(0, pixels, step)] if pixels else []
        per_frame = max(1, -(-pixels // step))
        partial = np.zeros((frames, per_frame, channels * 256), np.int64)
        planes = np.ascontiguousarray(x)

        def count(item: tuple[int, int]) -> None:
            f, p = item
            count_band(planes[f], partial[f, p // step], channels, p, min(p + step, pixels))

        if len(items) == 1:
            count(items[0])
        else:
            run_bands(count, items)
        counts = partial.sum(1) if per_frame > 1 else partial[:, 0]
    elif channels == 1 and pixels >= 1 << 16:
        # Big gray frames: bytes counted in pairs, half the elements through np.bincount (which
        # widens each to intp): a pair (a, b) is one uint16 key, and sum(0) + sum(1) of its
        # 256 x 256 counts counts each byte once, in either byte order.
        counts = np.empty((frames, 256), np.int64)
        for f in range(frames):
            row = x[f]
            # The uint16 view needs contiguous bytes: a strided plane (a channel of an RGB
            # frame, a flipped or transposed view) is copied first.
            even = np.ascontiguousarray(row[: pixels - pixels % 2])
            pair = np.bincount(even.view(np.uint16), minlength=1 << 16).reshape(256, 256)
            counts[f] = pair.sum(0) + pair.sum(1)
            if pixels % 2:
                counts[f, row[-1]] += 1
    else:
        # Every (frame, channel, value) is one key of one np.bincount.
        base = (np.arange(frames * channels, dtype=np.intp) * 256).reshape(frames, 1, channels)
        keys = x.reshape(frames, pixels, channels) + base
        counts = np.bincount(keys.reshape(-1), minlength=frames * channels * 256)
    # bin = value >> (8 - log2 bins): consecutive runs of 256 // bins values.
    counts = counts.astype(np.int64, copy=False).reshape(frames, channels, bins, 256 // bins).sum(-1)
    return counts.reshape(lead + ((channels, bins) if has_channels else (bins,)))


#: JAX histogram: at most this many copies of the counters (a power of two), and at most this
#: many counters in all (int32; 256 KiB), so big batches, with keys enough to spread, use fewer.
_HISTOGRAM_COPIES = 256
_HISTOGRAM_COUNTERS = 2**16


@functools.lru_cache(maxsize=None)
def _histogram_jax_compiled(bins: int, has_channels: bool) -> Any:
    import jax.numpy as jnp

    def run(img: Any) -> Any:
        lead, pixels, channels = _shape_parts(tuple(img.shape), has_channels)
        frames = math.prod(lead)
        shift = 8 - (bins.bit_length() - 1)
        key = jnp.reshape(jnp.right_shift(img, shift).astype(jnp.int32), (frames, pixels, channels))
        base = (jnp.arange(frames, dtype=jnp.int32) * (channels * bins))[:, None, None] + (
            jnp.arange(channels, dtype=jnp.int32) * bins
        )[None, None, :]
        n_keys = frames * channels * bins
        # Scatter-add of ones: integer additions commute, so the counts are exact however XLA
        # orders them (atomics on a GPU). A bin holds < 2^31 pixels of one frame: int32 is enough.
        # Partitioned: element p adds to copy p % copies of the counters, and the copies are
        # summed afterwards (exact in any order). On a GPU a scatter into 256 counters serializes
        # on atomics to the same address (contended scatter-adds are a known XLA GPU weak
        # spot, e.g. jax-ml/jax#38806); neighbouring
        # elements now hit different copies (the partitioned scatter of pytorch/pytorch#168073).
        # The alternatives measured on CPU-JAX (a plain scatter, 256 copies, sort + searchsorted,
        # one-hot compare + sum) were slower (docs/benchmarks.md); the compare + sum would
        # parallelize on a GPU but costs 256 compares per pixel.
        copies = _HISTOGRAM_COPIES
        while copies > 1 and copies * n_keys > _HISTOGRAM_COUNTERS:
            copies //= 2
        index = key + base
        if copies > 1:  # p = element index within its frame (< 2^31); copies is a power of two
            lane = jnp.bitwise_and(jnp.arange(pixels * channels, dtype=jnp.int32), copies - 1)
            index = index + jnp.reshape(lane * n_keys, (1, pixels, channels))  # < copies * n_keys <= 2^16
        counts = jnp.zeros(copies * n_keys, jnp.int32).at[jnp.reshape(index, (-1,))].add(1)
        counts = jnp.sum(jnp.reshape(counts, (copies, n_keys)).astype(jnp.int64), axis=0)
        return jnp.reshape(counts, lead + ((channels, bins) if has_channels else (bins,)))

    return jit(run)



# --------------------------------------------------------------------------------------------
# threshold_two_peaks
# --------------------------------------------------------------------------------------------
@kernel("threshold_two_peaks")
def two_peaks_kernel(xp: Any, hist: Any, *, rule: str) -> Any:
    """The report's ``(first + second) / 2`` clamped to [50, 200], per 256-bin histogram (int64)."""
    h = xp.astype(hist, xp.int64)
    idx = xp.arange(256, dtype=xp.int64)
    if rule == "report_gpu":
        # Section 8.3.2's reduction replayed: at offset o, slot t < o takes slot t + o's count and
        # index when strictly larger. Slots 0 and 1 end with the best even and the best odd bin.
        val = h
        ind = xp.broadcast_to(idx, h.shape)
        o = 128
        while o > 1:
            take = val[..., :o] < val[..., o : 2 * o]
            val = xp.where(take, val[..., o : 2 * o], val[..., :o])
            ind = xp.where(take, ind[..., o : 2 * o], ind[..., :o])
            o //= 2
        first, second = ind[..., 0], ind[..., 1]
    else:
        # Section 8.3.1's loop keeps the later index on equal counts (`>=`), so the first peak is
        # the LAST bin holding the largest count.
        top = xp.max(h, axis=-1, keepdims=True)
        first = xp.max(xp.where(h == top, idx, -1), axis=-1)
        before = idx < first[..., None]
        if rule == "report_cpu":
            # As printed, `sec_max = max` runs after `max = histogram[i]`, so the `else if` is
            # dead and the second index is the previous record: the last bin before the first
            # peak holding the largest count before it (-1 if the peak is bin 0).
            left = xp.max(xp.where(before, h, -1), axis=-1, keepdims=True)
            second = xp.max(xp.where(before & (h == left), idx, -1), axis=-1)
        else:
            # The intended loop: the second largest count S among the other bins; on equal counts
            # the loop keeps a bin before the peak (the last such, demoted by `>=`), else the
            # first one after it (`>` is strict there).
            rest = xp.max(xp.where(idx != first[..., None], h, -1), axis=-1, keepdims=True)
            left = xp.max(xp.where(before & (h == rest), idx, -1), axis=-1)
            right = xp.min(xp.where((idx > first[..., None]) & (h == rest), idx, 256), axis=-1)
            second = xp.where(left >= 0, left, right)
    # C's `/` truncates toward zero; floor differs only for first + second == -1 (first = 0,
    # no second), and both then clamp to 50.
    # asarray: NumPy reduces a single histogram to a scalar; callers get a 0-d array.
    return xp.asarray(xp.clip((first + second) // 2, 50, 200))



# --------------------------------------------------------------------------------------------
# threshold_otsu
# --------------------------------------------------------------------------------------------
@kernel("threshold_otsu")
def otsu_kernel(xp: Any, hist: Any) -> Any:
    """OpenCV's getThreshVal_Otsu on each 256-bin histogram: int64 thresholds.

    Transcribed operation by operation (modules/imgproc/src/thresh.cpp, OpenCV 4.x)::

        mu = sum(i * h[i]) * scale            # scale = 1. / N
        for i: p = h[i] * scale; mu1 *= q1; q1 += p; q2 = 1. - q1
               if min(q1, q2) < FLT_EPSILON or max(q1, q2) > 1. - FLT_EPSILON: continue
               mu1 = (mu1 + i * p) / q1; mu2 = (mu - q1 * mu1) / q2
               sigma = q1 * q2 * (mu1 - mu2) * (mu1 - mu2)
               if sigma > max_sigma: max_sigma = sigma; max_val = i

    NumPy rounds each operation to double (no FMA). The 256 steps run as a Python loop over the
    bins, vectorized over the histograms; JAX and CuPy have overrides.
    """
    h = xp.astype(hist, xp.int64)
    n = xp.sum(h, axis=-1)
    # OpenCV accumulates mu from integers in double; every partial sum is an integer below
    # 255 * 2^31 < 2^53, so it is exact and equals the int64 sum.
    s = xp.sum(h * xp.arange(256, dtype=xp.int64), axis=-1)
    hf = xp.astype(h, xp.float64)
    scale = 1.0 / xp.astype(n, xp.float64)
    mu = xp.astype(s, xp.float64) * scale
    mu1 = xp.zeros_like(scale)
    q1 = xp.zeros_like(scale)
    max_sigma = xp.zeros_like(scale)
    max_val = xp.zeros(n.shape, dtype=xp.int64)
    for i in range(256):
        p = hf[..., i] * scale
        mu1_q1 = mu1 * q1
        q1 = q1 + p
        q2 = 1.0 - q1
        skip = (xp.minimum(q1, q2) < FLT_EPSILON) | (xp.maximum(q1, q2) > 1.0 - FLT_EPSILON)
        # Skipped steps keep mu1 = mu1 * q1, as OpenCV's `continue` does; their divisions are
        # discarded, so divide by 1 there to stay finite.
        new_mu1 = (mu1_q1 + float(i) * p) / xp.where(skip, 1.0, q1)
        mu2 = (mu - q1 * new_mu1) / xp.where(skip, 1.0, q2)
        d = new_mu1 - mu2
        sigma = q1 * q2 * d * d
        better = ~skip & (sigma > max_sigma)
        max_sigma = xp.where(better, sigma, max_sigma)
        max_val = xp.where(better, i, max_val)
        mu1 = xp.where(skip, mu1_q1, new_mu1)
    return xp.asarray(max_val)  # a 0-d array, not a NumPy scalar, for a single histogram


@functools.lru_cache(maxsize=None)
def _otsu_jax_compiled() -> Any:
    import jax.numpy as jnp
    from jax import lax

    def run(hist: Any) -> Any:
        lead = hist.shape[:-1]
        h = jnp.reshape(hist.astype(jnp.int64), (-1, 256))
        n = jnp.sum(h, axis=-1)
        s = jnp.sum(h * jnp.arange(256, dtype=jnp.int64), axis=-1)
        # XLA (CPU and GPU) contracts a*b + c into an FMA, which rounds once where OpenCV rounds
        # twice. XOR-ing a product's bits with a zero the compiler cannot see (n < 2^31, so
        # n >> 62 == 0) makes it a rounded double that no add can fuse with.
        hidden_zero = jnp.right_shift(n, 62)

        def rounded(x: Any) -> Any:
            bits = lax.bitcast_convert_type(x, jnp.int64)
            return lax.bitcast_convert_type(jnp.bitwise_xor(bits, hidden_zero), jnp.float64)

        scale = 1.0 / n.astype(jnp.float64)
        mu = rounded(s.astype(jnp.float64) * scale)

        def step(carry: tuple, xs: tuple) -> tuple:
            mu1, q1, max_sigma, max_val = carry
            count, i = xs
            p = rounded(count * scale)
            mu1_q1 = rounded(mu1 * q1)
            q1 = q1 + p
            q2 = 1.0 - q1
            skip = (jnp.minimum(q1, q2) < FLT_EPSILON) | (jnp.maximum(q1, q2) > 1.0 - FLT_EPSILON)
            new_mu1 = (mu1_q1 + rounded(i.astype(jnp.float64) * p)) / jnp.where(skip, 1.0, q1)
            mu2 = (mu - rounded(q1 * new_mu1)) / jnp.where(skip, 1.0, q2)
            d = new_mu1 - mu2
            sigma = q1 * q2 * d * d
            better = ~skip & (sigma > max_sigma)
            carry = (
                jnp.where(skip, mu1_q1, new_mu1),
                q1,
                jnp.where(better, sigma, max_sigma),
                jnp.where(better, i, max_val),
            )
            return carry, None

        zero = jnp.zeros(n.shape, jnp.float64)
        init = (zero, zero, zero, jnp.zeros(n.shape, jnp.int64))
        xs = (jnp.transpose(h).astype(jnp.float64), jnp.arange(256, dtype=jnp.int64))
        # Unrolled 8 steps per loop trip: on a GPU each trip of a scan is a kernel launch, and 256
        # launches cost more than the work (docs/benchmarks.md); the arithmetic (and so every bit)
        # is the same.
        (_, _, _, max_val), _ = lax.scan(step, init, xs, unroll=8)
        return jnp.reshape(max_val, lead)

    return jit(run)


@otsu_kernel.override("jax")
def _otsu_jax(hist: Any) -> Any:
    # The portable loop would unroll 256 steps under jit (seconds to compile) and let XLA fuse
    # products into FMAs; this scan compiles once per shape and rounds like OpenCV.
    return _otsu_jax_compiled()(hist)



# --------------------------------------------------------------------------------------------
# binarize
# --------------------------------------------------------------------------------------------
@kernel("binarize")
def binarize_kernel(xp: Any, img: Any, *thresholds: Any, scalar: int | None, has_channels: bool) -> Any:
    """255 where ``img > threshold`` else 0 (uint8). ``thresholds``: one integer array that
    broadcasts to the leading axes (plus channels), or none and the Python int ``scalar``."""
    if thresholds:
        lead, _, channels = _shape_parts(tuple(img.shape), has_channels)
        target = lead + ((channels,) if has_channels else ())
        t = xp.broadcast_to(thresholds[0], target)
        t = xp.reshape(t, lead + ((1, 1, channels) if has_channels else (1, 1)))
        # uint8 against any integer type promotes to a type holding both: the comparison is exact.
        above = img > t
    else:
        above = img > scalar
    return xp.astype(above, xp.uint8) * 255



# --------------------------------------------------------------------------------------------
# Histogram, thresholds, binarization (the Webcam Streaming & Filters report's section 8)
# --------------------------------------------------------------------------------------------
def histogram(image: Any, *, bins: int = 256, channel_axis: Any = "auto") -> Any:
    """Count the pixel values of each frame (and channel): the report's step 2 (section 8.2).

    ``counts[..., b] = #{pixels p : p * bins // 256 == b}``, exact int64 counts.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Leading axes are a batch: one histogram per frame.
    bins : int
        Number of bins, a divisor of 256 (1, 2, 4, ..., 256); bin ``b`` holds the values
        ``b * 256 // bins`` to ``(b + 1) * 256 // bins - 1``.
    channel_axis : {'auto', None, -1}
        ``-1``: the last axis holds channels, counted separately. ``None``: all leading axes
        are a batch of 2-D planes. ``'auto'``: channels when ``ndim >= 3`` and the last axis has
        at most 4 entries.

    Returns
    -------
    int64 array on the active backend: ``(..., bins)`` for ``(..., H, W)`` input (``(bins,)``
    for one ``(H, W)`` image), ``(..., C, bins)`` for ``(..., H, W, C)`` input.

    Notes
    -----
    Equal to ``cv2.calcHist([img], [c], None, [bins], [0, 256])`` per frame and channel (which
    returns float32 counts). The report's CPU loop ``histogram[bw.at(row, col)]++`` (8.2.1),
    computed without data races: the portable version sorts per-frame keys and counts them with
    ``searchsorted`` (no pixels x bins one-hot array); the CUDA kernel gives each warp its own
    shared-memory histogram (the report's 8.2.3 with contention cut), reads 16-byte vectors,
    and adds each block's counts to the result with one 64-bit atomic per bin. Integer atomics
    commute, so the counts are exact whatever order they land in.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 0, 255], [10, 130, 255]], np.uint8)
    >>> h = portcv.to_numpy(portcv.color.histogram(img))
    >>> h.shape, h.dtype, h[[0, 10, 130, 255]]
    ((256,), dtype('int64'), array([2, 1, 1, 2]))
    >>> portcv.to_numpy(portcv.color.histogram(img, bins=4))
    array([3, 0, 1, 2])
    """
    img = _validate.image(image)
    bins = _validate.integer(bins, "bins", low=1, high=256)
    if bins not in BINS:
        raise ValueError(f"bins must divide 256 (one of {BINS}), got {bins}")
    has_channels = _validate.has_channels(img, channel_axis)
    return histogram_kernel(img, bins=bins, has_channels=has_channels)


def _histogram_argument(hist: Any) -> Any:
    """Check a ``(..., 256)`` integer histogram argument and move it to the active backend."""
    if owner_of(hist) is None:
        if isinstance(hist, (list, tuple)):
            try:
                hist = np.asarray(hist)
            except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
                raise ValueError(f"hist must be a rectangular array; got a ragged nested {type(hist).__name__}") from None
        else:
            raise TypeError(f"hist must be an array (NumPy, CuPy or JAX), got {type(hist).__name__}")
    dtype = np.dtype(hist.dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"hist must hold integer counts, got dtype {dtype}")
    shape = tuple(hist.shape)
    if len(shape) < 1 or shape[-1] != 256:
        raise ValueError(f"hist must have 256 bins in its last axis (..., 256), got shape {shape}")
    if 0 in shape:
        raise ValueError(f"hist must not be empty, got shape {shape}")
    return asarray(hist)
