"""3-D convolution of video, eq. (1) of Lin et al.'s video-parallelization article.

``(V * K)[t, y, x] = sum_l sum_n sum_m V[t - l, y - n, x - m] K[l, n, m]`` with integer video and
integer taps, summed exactly. Three methods give the same bits:

- ``direct``: the sum itself, in int32 (the portable code: one shifted slice per tap); CuPy runs
  ``_convolve3d_cuda.cu`` (each thread keeps the sums of 4 output frames x 4 or 8 pixels in registers
  and streams the input rows of all the frames they need through them, after one launch that
  pads the video), JAX runs XLA's float32 convolution with
  ``precision="highest"``, exact while ``max|V| * sum|K| < 2**24``.
- ``fft``: a float64 3-D FFT product rounded to the nearest integer, exact while the error bound
  of :func:`fft_error_bound` is below 0.25 (otherwise ``direct`` runs).
- ``hybrid``: a float64 2-D FFT per frame, products summed along time, rounded the same way.
  On CuPy both FFT methods run cuFFT with ``_convolve3d_cuda.cu``'s kernels around it (the padded
  float64 input in one launch, the hybrid's sum along time in one launch, the rounding of the
  kept part in one launch) and keep the kernel's spectrum of the last few calls.

Everything before the sum (the border, the flip of the kernel) and after it (the rounding shift
and saturation) is shared, so a method is only "valid correlation of a padded volume". Each
method gets the unpadded video and the border rule: the portable code pads with
:func:`pad_video`, CUDA pads in the launch that prepares its input (for the FFT methods, the
float64 copy zero-padded to the transforms' lengths).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .. import _validate
from .._border import BORDERS, pad_axis
from .._kernel import kernel
from .._separable_pass import OUT_DTYPES, finish_accumulator
from ..backends import backend, require_dtype, to_numpy
from ..backends.jax import quiet_pallas_triton

#: Video dtypes and their value ranges (the exactness bounds use the largest magnitude).
VIDEO_DTYPES = {"uint8": (0, 255), "uint16": (0, 65535), "int16": (-32768, 32767)}
METHODS = ("auto", "direct", "fft", "hybrid")
TIME_MODES = ("valid", "same")
#: Largest kernel side (odd); the CUDA kernel unrolls the row taps for each width up to it.
MAX_SIDE = 31
#: The FFT methods run only while :func:`fft_error_bound` stays below this (the rounding to the
#: nearest integer is exact below 0.5; 0.25 keeps a factor of two in hand).
FFT_BOUND_LIMIT = 0.25
#: Constant of the FFT error bound: ||y_fft - y||_inf <= ||x||_2 ||h||_2 * C * log2(N) * 2**-53
#: for FFT libraries whose internals we do not control (pocketfft, cuFFT, ducc); the rigorous
#: power-of-two constant is about 3(1 + sqrt 5) ~ 9.7.
FFT_BOUND_CONSTANT = 12.0
#: ``auto``'s cost model, measured at the article's size (720x560, k + 3 frames in, 4 out):
#: seconds per multiply-add of ``direct`` and seconds per ``N log2 N`` unit of the FFT side,
#: which is ``hybrid`` everywhere, for each kind of executor a backend is (:func:`executor`). On
#: the host the hybrid method wins at every size; with CuPy's CUDA direct kernel hybrid wins from
#: about k = 15, with JAX's Pallas direct kernel from k = 9 (the figures: docs/benchmarks.md,
#: "convolve3d's cost model"). Other device backends: the CUDA kernels' figures.
COSTS = {"host": (2e-9, 1.5e-9), "cuda kernels": (6e-14, 5e-13), "compiled programs": (1.8e-13, 5.8e-13)}


def executor(b: Any) -> str:
    """The :data:`COSTS` entry of backend ``b``, from what it declares: arrays in host memory,
    whole programs compiled (XLA on a device), or else launched kernels (CuPy)."""
    return "host" if b.runs_on_host else "compiled programs" if b.compiles_programs else "cuda kernels"


@functools.lru_cache(maxsize=None)
def dtype_name(dtype: Any) -> str:
    """``np.dtype(dtype).name``, cached: NumPy computes the name in Python (4 µs on a 2-core
    host), and a GPU call's host work is what its time per frame waits for."""
    return np.dtype(dtype).name


def largest_sample(video_dtype: Any) -> int:
    """The largest magnitude a sample of ``video_dtype`` can have (255, 65535, 32768)."""
    lo, hi = VIDEO_DTYPES[dtype_name(video_dtype)]
    return max(abs(lo), abs(hi))


def _abs_sum(taps: np.ndarray) -> int:
    """The largest ``sum|taps|`` of a kernel of the bank ``taps`` (F, kt, kh, kw)."""
    return int(np.abs(taps.reshape(taps.shape[0], -1)).sum(axis=1).max())


def worst_case_sum(video_dtype: Any, taps: np.ndarray) -> int:
    """The largest magnitude any partial sum of the direct method can reach: the largest
    ``sum|taps|`` of a kernel of the bank ``taps`` (F, kt, kh, kw) times the largest sample."""
    return _abs_sum(taps) * largest_sample(video_dtype)


def _smooth7(n: int) -> int:
    """The smallest 7-smooth integer >= n (2^a 3^b 5^c 7^d): FFT sizes every library does fast,
    without Bluestein's algorithm (whose extra rounding the error bound does not cover)."""
    best = 1 << max(0, (n - 1).bit_length())
    p7 = 1
    while p7 < best:
        p5 = p7
        while p5 < best:
            p3 = p5
            while p3 < best:
                m = p3
                while m < n:
                    m *= 2
                best = min(best, m)
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best


def fft_shape(padded_shape: tuple[int, ...], axes: int) -> tuple[int, ...]:
    """FFT lengths of the last ``axes`` axes of a padded volume: each its 7-smooth ceiling.

    No extra zero padding is needed: with a length >= the padded input, the circular
    convolution's wrap-around lands only outside the 'valid' part that is kept.
    """
    return tuple(_smooth7(n) for n in padded_shape[-axes:])


def fft_error_bound(video_shape: tuple[int, ...], video_dtype: Any, kernel: Any, *, method: str = "fft",
                    time_mode: str = "valid") -> float:
    """Worst-case distance from an integer of the float64 FFT result of ``convolve3d(video,
    kernel, method=method, time_mode=time_mode)`` for any video of this shape and dtype.

    The FFT methods run only while this is below 0.25 (rounding to the nearest integer is exact
    below 0.5); ``direct`` runs otherwise, with the same bits. See :func:`convolve3d`.

    Parameters
    ----------
    video_shape : tuple of int
        ``(..., T, H, W)``, positive, at most 2**31 - 1 samples in all (a video
        :func:`convolve3d` takes; ``time_mode='valid'`` needs ``T >= kt``).
    video_dtype : {uint8, uint16, int16}
    kernel : (kt, kh, kw) or (F, kt, kh, kw) array_like of int
        As in :func:`convolve3d`.
    method : {'fft', 'hybrid'}
    time_mode : {'valid', 'same'}

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, portcv
    >>> k = np.ones((15, 15, 15), np.int32) * 19                     # sum|k| ~ 2**16
    >>> b = portcv.volume.fft_error_bound((18, 560, 720), np.uint8, k)
    >>> bool(b < 0.25)
    True
    """
    method = _validate.choice(method, "method", ("fft", "hybrid"))
    time_mode = _validate.choice(time_mode, "time_mode", TIME_MODES)
    try:
        dtype = None if video_dtype is None else np.dtype(video_dtype)
    except TypeError:  # NumPy's "data type not understood" names no argument
        dtype = None
    if dtype is None or dtype.name not in VIDEO_DTYPES:
        raise TypeError(f"video_dtype must be uint8, uint16 or int16, got {video_dtype!r}")
    taps, _ = check_kernel(kernel)
    kt, kh, kw = taps.shape[1:]
    shape = _check_video_shape(video_shape)
    if time_mode == "valid" and shape[-3] < kt:
        raise ValueError(f"video_shape has {shape[-3]} frames; time_mode='valid' needs at least kt = {kt}")
    t, h, w = shape[-3:]
    padded = (t + (kt - 1 if time_mode == "same" else 0), h + kh - 1, w + kw - 1)
    return _fft_error_bound(video_dtype, padded, taps, method)


def _check_video_shape(video_shape: Any) -> tuple[int, ...]:
    """The shape of a video :func:`convolve3d` takes: (..., T, H, W) positive ints, at most
    :data:`~portcv._validate.MAX_ELEMENTS` samples."""
    if not isinstance(video_shape, (tuple, list)) or len(video_shape) < 3:
        raise ValueError(f"video_shape must be a (..., T, H, W) tuple of ints, got {video_shape!r}")
    shape = tuple(_validate.integer(n, "video_shape", low=1, high=_validate.MAX_ELEMENTS) for n in video_shape)
    if math.prod(shape) > _validate.MAX_ELEMENTS:
        raise ValueError(f"video_shape {shape} has {math.prod(shape)} samples; at most {_validate.MAX_ELEMENTS} "
                         "are supported")
    return shape


def _fft_error_bound(video_dtype: Any, padded_shape: tuple[int, ...], kernel: Any, method: str) -> float:
    """Worst-case distance from an integer of any float64 FFT result of this convolution.

    ``B = vmax * sqrt(n) * ||K||_2 * 12 * log2(N) * 2**-53``, from the classic bound on the FFT
    convolution of a signal ``x`` with ``h``: ``||x||_2 ||h||_2 * c * log2(N) * u`` (u = 2**-53;
    ``||x||_2 <= vmax * sqrt(n)`` for ``n`` samples of magnitude at most ``vmax``; c = 12 for
    mixed-radix libraries). For ``fft`` the samples and the FFT are the whole padded volume;
    for ``hybrid`` they are ``kt`` frames and the 2-D FFT of one frame, with ``log2(kt)``
    added to ``log2(N)`` for the sum along time. Computed on the host from the dtype and the
    static kernel, so checking it never waits for the device. The FFT methods run only while
    ``B < 0.25``.
    """
    vmax = largest_sample(video_dtype)
    taps = np.asarray(kernel, dtype=np.float64)
    taps = taps.reshape((-1,) + taps.shape[-3:])
    norm = float(np.sqrt((taps**2).sum(axis=(1, 2, 3))).max())
    kt = taps.shape[1]
    if method == "hybrid":
        sizes = fft_shape(padded_shape, 2)
        n = kt * padded_shape[-2] * padded_shape[-1]
        log_n = math.log2(math.prod(sizes)) + math.log2(kt) + 1
    else:
        sizes = fft_shape(padded_shape, 3)
        n = math.prod(padded_shape[-3:])
        log_n = math.log2(math.prod(sizes))
    return vmax * math.sqrt(n) * norm * FFT_BOUND_CONSTANT * max(log_n, 1.0) * 2.0**-53


def choose_method(method: str, video_dtype: Any, padded_shape: tuple[int, ...], kernel: Any) -> str:
    """The method that runs for ``method`` (``auto`` by the cost model, an FFT method only within
    its error bound; every choice gives the same bits)."""
    taps = np.asarray(kernel).reshape((-1,) + np.shape(kernel)[-3:])
    if method == "direct":
        return "direct"
    if method in ("fft", "hybrid"):
        return method if _fft_error_bound(video_dtype, padded_shape, taps, method) < FFT_BOUND_LIMIT else "direct"
    # auto: direct costs one multiply-add per nonzero tap and output; the 3-D FFT ~ N log2 N per
    # transform, three transforms (video, kernel, inverse) per kernel of the bank.
    b = backend()
    per_mac, per_unit = COSTS[executor(b)]
    f, kt, kh, kw = taps.shape
    outputs = (padded_shape[-3] - kt + 1) * (padded_shape[-2] - kh + 1) * (padded_shape[-1] - kw + 1)
    direct = per_mac * outputs * int(np.count_nonzero(taps))
    n_fft = math.prod(fft_shape(padded_shape, 3))
    fft = per_unit * n_fft * math.log2(n_fft) * (1 + 2 * f)
    if fft < direct and _fft_error_bound(video_dtype, padded_shape, taps, "hybrid") < FFT_BOUND_LIMIT:
        return "hybrid"
    return "direct"


# --------------------------------------------------------------------------------------------
# The three methods: 'valid' correlation of a padded volume (..., Tp, Hp, Wp) with taps
# (F, kt, kh, kw) -> int32 (..., F, Tp - kt + 1, Hp - kh + 1, Wp - kw + 1); the direct one takes
# the video and the border rule and pads it itself (on CUDA in one launch)
# --------------------------------------------------------------------------------------------
def _taps_array(taps: tuple, shape: tuple) -> np.ndarray:
    return np.asarray(taps, dtype=np.int64).reshape(shape)


@kernel("convolve3d_direct")
def convolve3d_direct_kernel(xp: Any, video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                             time_mode: str) -> Any:
    """Portable direct sum: ``acc[f, t, y, x] = sum taps[f, l, n, m] * padded[t+l, y+n, x+m]``
    of the video padded by :func:`pad_video` (int32, exact: the caller checked
    ``max|v| * sum|taps| < 2**31``); one shifted slice per nonzero tap."""
    f_count, kt, kh, kw = shape
    padded = pad_video(xp, video, shape[1:], border, border_value, time_mode)
    tp, hp, wp = padded.shape[-3:]
    t_out, h, w = tp - kt + 1, hp - kh + 1, wp - kw + 1
    x = xp.astype(padded, xp.int32)
    w4 = _taps_array(taps, shape)
    outs = []
    for f in range(f_count):
        acc = None
        for (l, n, m), t in np.ndenumerate(w4[f]):  # the only Python loops: over taps
            if t == 0:
                continue
            term = x[..., l:l + t_out, n:n + h, m:m + w] * int(t)
            acc = term if acc is None else acc + term
        outs.append(xp.zeros(padded.shape[:-3] + (t_out, h, w), dtype=xp.int32) if acc is None else acc)
    return xp.stack(outs, axis=-4)


def _round_to_int32(xp: Any, y: Any) -> Any:
    return xp.astype(xp.round(require_dtype(y, "float64", "the FFT convolution")), xp.int32)


@kernel("convolve3d_fft")
def convolve3d_fft_kernel(xp: Any, video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                          time_mode: str) -> Any:
    """Portable 3-D FFT method: ``irfftn(rfftn(v) * rfftn(K))`` in float64 of the video padded by
    :func:`pad_video` (the convolution with the unflipped kernel ``K`` is the correlation with
    ``taps``), 'valid' part, rounded."""
    f_count, kt, kh, kw = shape
    padded = pad_video(xp, video, shape[1:], border, border_value, time_mode)
    tp, hp, wp = padded.shape[-3:]
    sizes = fft_shape(padded.shape, 3)
    axes = (-3, -2, -1)
    v = xp.fft.rfftn(xp.astype(padded, xp.float64), s=sizes, axes=axes)
    k = xp.asarray(_taps_array(taps, shape)[:, ::-1, ::-1, ::-1].astype(np.float64))
    spectra = xp.fft.rfftn(k, s=sizes, axes=axes)
    outs = []
    for f in range(f_count):
        y = xp.fft.irfftn(v * spectra[f], s=sizes, axes=axes)
        outs.append(y[..., kt - 1:tp, kh - 1:hp, kw - 1:wp])
    return _round_to_int32(xp, xp.stack(outs, axis=-4))


@kernel("convolve3d_hybrid")
def convolve3d_hybrid_kernel(xp: Any, video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                             time_mode: str) -> Any:
    """Portable hybrid method (the article's "hybrid Fourier") on the video padded by
    :func:`pad_video`: one float64 2-D FFT per frame, the products with each time slice's 2-D
    kernel spectrum summed along time, one inverse 2-D FFT per output frame; 'valid' part,
    rounded."""
    f_count, kt, kh, kw = shape
    padded = pad_video(xp, video, shape[1:], border, border_value, time_mode)
    tp, hp, wp = padded.shape[-3:]
    t_out = tp - kt + 1
    sizes = fft_shape(padded.shape, 2)
    axes = (-2, -1)
    frames = xp.fft.rfft2(xp.astype(padded, xp.float64), s=sizes, axes=axes)
    # Correlation along time with taps[l]; convolution in space with the spatially flipped slice.
    k = xp.asarray(_taps_array(taps, shape)[:, :, ::-1, ::-1].astype(np.float64))
    spectra = xp.fft.rfft2(k, s=sizes, axes=axes)  # (F, kt, h2, w2 // 2 + 1)
    outs = []
    for f in range(f_count):
        acc = None
        for l in range(kt):
            term = frames[..., l:l + t_out, :, :] * spectra[f, l]
            acc = term if acc is None else acc + term
        y = xp.fft.irfft2(acc, s=sizes, axes=axes)
        outs.append(y[..., kh - 1:hp, kw - 1:wp])
    return _round_to_int32(xp, xp.stack(outs, axis=-4))



def exact_in_float32(video_dtype: Any, taps: np.ndarray) -> bool:
    """Whether every partial sum of the direct method is an integer below 2**24 in magnitude, so
    float32 multiply-adds are exact in any order (cuDNN's or FFMA's)."""
    return worst_case_sum(video_dtype, taps) < 2**24


@functools.lru_cache(maxsize=64)
def _float32_exact_for(video_dtype: str, taps: tuple, shape: tuple) -> bool:
    return exact_in_float32(video_dtype, _taps_array(taps, shape))




@functools.cache
def _jax_conv() -> Any:
    """XLA's float32 3-D correlation of a padded volume with taps (F, kt, kh, kw), exact: every
    partial sum is an integer below 2**24 (checked by the caller), so float32 adds are exact in
    any order and any algorithm that multiplies and adds (cuDNN's, measured exact on an H100 at
    k = 5, 9, 15) gives the integer sum; ``precision="highest"`` keeps TF32 off."""
    import jax.numpy as jnp
    from jax import lax

    from ..backends.jax import jit

    def run(padded: Any, taps: Any) -> Any:
        lead = padded.shape[:-3]
        x = jnp.reshape(padded, (-1, 1) + padded.shape[-3:]).astype(jnp.float32)
        k = jnp.asarray(taps)[:, None]  # (F, 1, kt, kh, kw): OIDHW
        y = lax.conv_general_dilated(x, k, (1, 1, 1), "VALID", precision=lax.Precision.HIGHEST,
                                     dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))
        return jnp.reshape(y.astype(jnp.int32), lead + y.shape[1:])

    return jit(run)


# --------------------------------------------------------------------------------------------
# The public function
# --------------------------------------------------------------------------------------------
def check_video(video: Any, name: str = "video", channel_axis: Any = "auto") -> Any:
    """A (..., T, H, W) uint8/uint16/int16 array of gray frames on the active backend."""
    dtype = getattr(video, "dtype", None)
    if dtype is not None and dtype_name(dtype) not in VIDEO_DTYPES:
        raise TypeError(f"{name} must have dtype uint8, uint16 or int16 (integer video), got {np.dtype(dtype)}")
    want = dtype_name(dtype) if dtype is not None else "uint8"
    return _validate.image(video, name, dtype=want, min_ndim=3, gray=True, channel_axis=channel_axis)


def check_kernel(kernel: Any, name: str = "kernel") -> tuple[np.ndarray, bool]:
    """Integer taps (kt, kh, kw) or a bank (F, kt, kh, kw), odd sides 1..31 -> (int64 (F, kt,
    kh, kw) on the host, read-only, whether it was a bank)."""
    plan = kernel_plan(kernel, name)
    return plan.taps, plan.bank


class KernelPlan(NamedTuple):
    """What a call needs to know of its kernel, worked out once per kernel (checks and all)."""

    taps: np.ndarray  #: int64 (F, kt, kh, kw), read-only
    bank: bool  #: given as (F, kt, kh, kw)
    abs_sum: int  #: the largest sum|taps| of a kernel of the bank
    correlation: Taps  #: the flipped taps as the static tuple the methods take


#: Kernels up to this many bytes have their plan cached (keyed by their bytes): banks too, whose
#: flip into Python ints costs most (40 15-cubes, 1 MB: 20 ms a call uncached, 0.5 ms to hash
#: the bytes). Larger ones (over 35 31-cubes of int64) are checked on every call.
_PLAN_CACHE_BYTES = 8 << 20


def kernel_plan(kernel: Any, name: str = "kernel") -> KernelPlan:
    """:class:`KernelPlan` of ``kernel``, or a clear error. Cached by the kernel's bytes, dtype
    and shape: the checks, ``sum|taps|`` and the flip cost 30 µs a call on a 2-core host, which
    is a GPU call's time per frame in a batch."""
    try:
        arr = to_numpy(kernel)  # any backend's array, a NumPy array or nested lists: read on the host
    except (TypeError, ValueError) as exc:  # None, strings, ragged lists: name the argument
        raise type(exc)(f"{name} must be an array of integer taps: {exc}") from None
    if arr.dtype.kind in "iuf" and arr.nbytes <= _PLAN_CACHE_BYTES:
        return _cached_plan(np.ascontiguousarray(arr).tobytes(), arr.dtype.str, arr.shape, name)
    return _plan(arr, name)


@functools.lru_cache(maxsize=32)
def _cached_plan(raw: bytes, dtype: str, shape: tuple, name: str) -> KernelPlan:
    return _plan(np.frombuffer(raw, dtype=dtype).reshape(shape), name)


def _plan(arr: np.ndarray, name: str) -> KernelPlan:
    if arr.ndim not in (3, 4):
        raise ValueError(f"{name} must be a 3-D kernel (kt, kh, kw) or a bank (F, kt, kh, kw), got shape {arr.shape}")
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integer taps, got dtype {arr.dtype}: quantize a real-valued "
                            "kernel with portcv.volume.quantize_kernel(kernel) -> (taps, shift)")
    if any(side % 2 == 0 or side > MAX_SIDE for side in arr.shape[-3:]):
        raise ValueError(f"{name} sides must be odd and at most {MAX_SIDE}, got {arr.shape[-3:]}")
    if np.abs(arr).max(initial=0) >= 2**31:
        raise ValueError(f"{name} taps must fit int32, got {np.abs(arr).max()}")
    taps = arr.astype(np.int64).reshape((-1,) + arr.shape[-3:])
    taps.flags.writeable = False
    return KernelPlan(taps, arr.ndim == 4, _abs_sum(taps), _correlation_taps(taps))


def _check_accumulator(video_dtype: Any, abs_sum: int, rounding: int) -> None:
    vmax = largest_sample(video_dtype)
    if abs_sum * vmax + rounding > 2**31 - 1:
        raise ValueError(
            f"kernel: the worst-case sum over {np.dtype(video_dtype)} video (sum|kernel| = {abs_sum} "
            f"times {vmax}) would overflow the int32 accumulator; use smaller taps "
            "(quantize_kernel(kernel, bits=...) with fewer bits)"
        )


class Taps(tuple):
    """The static tuple of taps the kernels take, hashed once: a k = 15 kernel has 3,375 taps,
    and every cache and ``jit`` keyed by them would otherwise hash all of them on every call
    (16 µs a time on a 2-core host)."""

    def __new__(cls, values: Any) -> "Taps":
        self = super().__new__(cls, values)
        self._hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._hash


def _correlation_taps(taps: np.ndarray) -> Taps:
    """The kernel flipped on its three axes (eq. (1) is a convolution; the methods correlate) as
    the static tuple the kernels take (once per kernel: :func:`kernel_plan` is cached)."""
    return Taps(int(t) for t in taps[:, ::-1, ::-1, ::-1].ravel())


def padded_shape(video_shape: tuple[int, ...], kernel_shape: tuple[int, int, int], time_mode: str) -> tuple[int, ...]:
    """The shape :func:`pad_video` gives (for choosing a method before padding)."""
    kt, kh, kw = kernel_shape
    t, h, w = video_shape[-3:]
    t = t + 2 * (kt // 2) if time_mode == "same" else t
    return tuple(video_shape[:-3]) + (t, h + 2 * (kh // 2), w + 2 * (kw // 2))


@functools.lru_cache(maxsize=64)
def _pipeline(b: Any, chosen: str, taps: Taps, shape: tuple, border: str, border_value: int, time_mode: str,
              shift: int, out_dtype: str, bank: bool) -> Any:
    """Padding, the chosen method and the rounding as one function of the video, compiled once
    per parameters by the backend's ``jit``: on JAX one program instead of a dispatch per pad
    (80-140 µs each on a GPU host); identity on NumPy and CuPy."""
    method_kernel = {"direct": convolve3d_direct_kernel, "fft": convolve3d_fft_kernel,
                     "hybrid": convolve3d_hybrid_kernel}[chosen]

    def run(video: Any) -> Any:
        xp = b.xp
        acc = method_kernel(video, taps=taps, shape=shape, border=border, border_value=border_value,
                            time_mode=time_mode)
        # The int32 sums are already the answer (no copy: the kernel's output is ours).
        out = acc if (shift, out_dtype) == (0, "int32") else finish_accumulator(xp, acc, ("shift", shift, 0, out_dtype))
        return out if bank else out[..., 0, :, :, :]

    compiled = b.jit(run)
    if compiled is run:  # eager backends: nothing is compiled, no Pallas kernel
        return run

    def quiet(video: Any) -> Any:
        with quiet_pallas_triton():  # JAX lowers the direct method's Pallas kernel here
            return compiled(video)

    return quiet


def pad_video(xp: Any, video: Any, kernel_shape: tuple[int, int, int], border: str, border_value: int,
              time_mode: str) -> Any:
    """The video with ``k // 2`` border samples on each side of H and W (and of T for
    ``time_mode="same"``), so every method computes a 'valid' correlation."""
    kt, kh, kw = kernel_shape
    x = pad_axis(xp, video, -1, kw // 2, kw // 2, border, border_value)
    x = pad_axis(xp, x, -2, kh // 2, kh // 2, border, border_value)
    if time_mode == "same":
        x = pad_axis(xp, x, -3, kt // 2, kt // 2, border, border_value)
    return x


def convolve3d(
    video: Any,
    kernel: Any,
    *,
    shift: int = 0,
    out_dtype: str | None = None,
    border: str = "reflect101",
    border_value: int = 0,
    time_mode: str = "valid",
    method: str = "auto",
    channel_axis: Any = "auto",
) -> Any:
    """3-D convolution of integer video with an integer kernel (or a bank of kernels), exact.

    Eq. (1) of Lin et al.'s video-parallelization article:
    ``out[t, y, x] = sum_{l,n,m} video[t - l, y - n, x - m] * kernel[l, n, m]`` with the kernel's
    centre at ``(kt // 2, kh // 2, kw // 2)`` (a true convolution: the kernel is flipped), summed
    exactly in int32, then ``shift`` and ``out_dtype`` as below. Every ``method`` returns the same
    bits on every backend.

    Parameters
    ----------
    video : (..., T, H, W) uint8, uint16 or int16 array
        Frames of gray video (any backend's array); leading axes are a batch of clips.
    kernel : (kt, kh, kw) or (F, kt, kh, kw) array_like of int
        Integer taps, odd sides up to 31 (read on the host; static). A 4-D kernel is a bank of
        ``F`` kernels: the output gets an axis of length ``F`` before T. Real-valued kernels:
        :func:`quantize_kernel` first (it returns the taps and the ``shift`` that undoes its
        scale). ``max|video| * sum|kernel| + 2**(shift-1)`` must fit int32.
    shift : int
        Right shift 0..30 with rounding after the sum: ``(acc + 2**(shift-1)) >> shift``, an
        arithmetic shift (it floors negative values: -2.5 -> -2, -3.5 -> -3).
    out_dtype : {None, 'int32', 'int16', 'uint8'}
        Output type; None is int32. int16 and uint8 saturate (OpenCV's ``saturate_cast``).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside each frame are made (OpenCV's BORDER_REFLECT_101 = scipy's 'mirror'
        is the default); with ``time_mode="same"`` the same rule makes frames before the first
        and after the last.
    border_value : int
        The value outside the video for ``border="constant"`` (within the video's dtype).
    time_mode : {'valid', 'same'}
        'valid' (the article's task: ``T - kt + 1`` output frames, each from real frames only)
        or 'same' (``T`` frames, the video extended by ``border``).
    method : {'auto', 'direct', 'fft', 'hybrid'}
        How the sum is computed (the result is the same): the direct sum, a float64 3-D FFT, or
        a float64 2-D FFT per frame summed along time (the article's hybrid Fourier). The FFT
        methods round a float64 result to the nearest integer; they run only while
        :func:`fft_error_bound` is below 0.25, and ``direct`` runs otherwise. ``auto`` picks by
        a cost model (:data:`COSTS`: multiply-adds of ``direct`` against ``N log2 N`` of the FFT;
        the FFT side runs ``hybrid``).
    channel_axis : {"auto", None}
        ``"auto"``: a video whose last axis has 3 or 4 entries is a colour video and is refused
        (convert its frames with :func:`portcv.color.rgb_to_gray`, or convolve each channel);
        ``None``: the leading axes are clips of gray frames, whatever their width.

    Returns
    -------
    array of shape ``(..., [F,] T_out, H, W)``, dtype ``out_dtype``.

    Notes
    -----
    Exactness: ``direct`` adds integers in int32 (or, in CUDA and on JAX, in float32 when every
    partial sum is an integer below 2**24, where float32 addition is exact in any order). The
    FFT methods are off from the exact integer by at most :func:`fft_error_bound` (a bound on
    float64 FFT rounding error), so rounding to the nearest integer gives it exactly when the
    bound is below 0.5; portcv asks for 0.25. At the article's size (k + 3 frames of 720 x 560)
    a uint8 video with a 16-bit kernel measures 1e-8 from an integer, against a bound of ~1e-4.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> video = np.zeros((5, 6, 6), np.uint8); video[2, 1, 1] = 10      # one bright sample
    >>> k = np.arange(27).reshape(3, 3, 3)
    >>> out = portcv.volume.convolve3d(video, k)                         # T - kt + 1 = 3 frames
    >>> int(portcv.to_numpy(out)[1, 1, 1]) == 10 * int(k[1, 1, 1])       # the impulse response
    True
    >>> same = portcv.volume.convolve3d(video, k, method="fft")
    >>> bool((portcv.to_numpy(same) == portcv.to_numpy(out)).all())
    True
    """
    vid = check_video(video, channel_axis=channel_axis)
    plan = kernel_plan(kernel)
    taps = plan.taps
    shift = _validate.integer(shift, "shift", low=0, high=30)
    out_dtype = "int32" if out_dtype is None else _validate.choice(out_dtype, "out_dtype", tuple(OUT_DTYPES))
    border = _validate.choice(border, "border", BORDERS)
    lo, hi = VIDEO_DTYPES[dtype_name(vid.dtype)]
    border_value = _validate.integer(border_value, "border_value", low=lo, high=hi)
    time_mode = _validate.choice(time_mode, "time_mode", TIME_MODES)
    method = _validate.choice(method, "method", METHODS)
    _check_accumulator(vid.dtype, plan.abs_sum, (1 << (shift - 1)) if shift else 0)
    kt, kh, kw = taps.shape[1:]
    if time_mode == "valid" and vid.shape[-3] < kt:
        raise ValueError(f"video has {vid.shape[-3]} frames; time_mode='valid' needs at least kt = {kt} "
                         "(or use time_mode='same')")
    frames_out = vid.shape[-3] - (kt - 1 if time_mode == "valid" else 0)
    outputs = math.prod(vid.shape[:-3]) * taps.shape[0] * frames_out * vid.shape[-2] * vid.shape[-1]
    if outputs > _validate.MAX_ELEMENTS:  # a bank multiplies the video's size by F
        raise ValueError(f"kernel: a bank of {taps.shape[0]} kernels over this video makes {outputs} output samples; "
                         f"at most {_validate.MAX_ELEMENTS} are supported")
    b = backend()
    chosen = choose_method(method, vid.dtype, padded_shape(tuple(vid.shape), (kt, kh, kw), time_mode), taps)
    run = _pipeline(b, chosen, plan.correlation, taps.shape, border, border_value, time_mode, shift, out_dtype,
                    plan.bank)
    return run(vid)
