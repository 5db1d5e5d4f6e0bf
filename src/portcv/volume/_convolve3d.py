"""3-D convolution of video, eq. (1) of Lin et al.'s video-parallelization article.

``(V * K)[t, y, x] = sum_l sum_n sum_m V[t - l, y - n, x - m] K[l, n, m]`` with integer video and
integer taps, summed exactly. Three methods give the same bits:

- ``direct``: the sum itself, in int32 (the portable code: one shifted slice per tap); CuPy runs
  ``_convolve3d.cu`` (each thread keeps the sums of 4 output frames x 4 or 8 pixels in registers
  and streams the input rows of all the frames they need through them, after one launch that
  pads the video), JAX runs XLA's float32 convolution with
  ``precision="highest"``, exact while ``max|V| * sum|K| < 2**24``.
- ``fft``: a float64 3-D FFT product rounded to the nearest integer, exact while the error bound
  of :func:`fft_error_bound` is below 0.25 (otherwise ``direct`` runs).
- ``hybrid``: a float64 2-D FFT per frame, products summed along time, rounded the same way.
  On CuPy both FFT methods run cuFFT with ``_convolve3d.cu``'s kernels around it (the padded
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
from .._border import BORDER_CODE, BORDERS, pad_axis
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


#: The CUDA kernels' input types. Their accumulator is float (FFMA, exact while every partial sum
#: is an integer below 2**24) or int (IMAD, exact below 2**31).
_CUDA_INPUT = {"uint8": "unsigned char", "uint16": "unsigned short", "int16": "short"}
_CUDA_BLOCK = (32, 8)
_CUDA_FRAMES_PER_THREAD = 4


def _cuda_x_per_thread(kw: int) -> int:
    """Output pixels per thread: 8 for narrow kernels (more multiply-adds per tap read: faster
    at k = 5 and 9), 4 from kw = 11 (at 8, k = 15 needs 136 registers and runs slower; the
    figures: docs/benchmarks.md, "Figures behind the kernels' choices")."""
    return 8 if kw <= 9 else 4


def exact_in_float32(video_dtype: Any, taps: np.ndarray) -> bool:
    """Whether every partial sum of the direct method is an integer below 2**24 in magnitude, so
    float32 multiply-adds are exact in any order (cuDNN's or FFMA's)."""
    return worst_case_sum(video_dtype, taps) < 2**24


@functools.lru_cache(maxsize=64)
def _float32_exact_for(video_dtype: str, taps: tuple, shape: tuple) -> bool:
    return exact_in_float32(video_dtype, _taps_array(taps, shape))


@convolve3d_direct_kernel.override(
    "cupy", supports="kernel widths up to 31, at most 12,288 taps per kernel (its rows of taps rounded up to 4)")
def _convolve3d_direct_cupy(video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                            time_mode: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant, launch_1d

    f_count, kt, kh, kw = shape
    # Shared memory holds one kernel's taps (48 KB), each row padded to a multiple of 4.
    n_taps = kt * kh * (-(-kw // 4) * 4)
    if kw > MAX_SIDE or n_taps > 12288:
        return NotImplemented
    t, h, w = video.shape[-3:]
    pad_t = kt // 2 if time_mode == "same" else 0
    tp, hp, wp = t + 2 * pad_t, h + kh - 1, w + kw - 1
    t_out = tp - kt + 1
    lead = video.shape[:-3]
    planes = math.prod(lead)
    t_blocks = -(-t_out // _CUDA_FRAMES_PER_THREAD)
    xs = _cuda_x_per_thread(kw)
    grid = (-(-w // (_CUDA_BLOCK[0] * xs)), -(-h // _CUDA_BLOCK[1]), planes * f_count * t_blocks)
    if grid[1] > 65535 or grid[2] > 65535:
        return NotImplemented
    in_type = _CUDA_INPUT[dtype_name(video.dtype)]
    # Padded rows `pitch` elements apart, a multiple of 16 bytes: the pad kernel stores 16-byte
    # pieces (the allocation itself is 256-byte aligned), and the sums read their windows as
    # whole words, at most xs + 2 samples past wp (xs + 1 for uint8, xs - 1 for 16-bit samples).
    per_piece = 16 // np.dtype(video.dtype).itemsize
    pitch = -(-(wp + xs + 2) // per_piece) * per_piece
    rows = planes * tp * hp
    pad_grid, pad_block = launch_1d(rows * 32)  # a warp per padded row
    if rows + pad_grid[0] * pad_block[0] // 32 > 2**31 - 1:  # the pad's row index (an int) and its stride
        return NotImplemented
    padded = cupy.empty(lead + (tp, hp, pitch), dtype=video.dtype)
    pad = cuda_function(__name__, f"portcv_convolve3d_pad<{in_type}>")
    pad(pad_grid, pad_block,
        (cupy.ascontiguousarray(video), padded, np.int32(planes * tp), np.int32(t), np.int32(h), np.int32(w),
         np.int32(tp), np.int32(hp), np.int32(wp), np.int32(pitch), np.int32(pad_t), np.int32(BORDER_CODE[border]),
         np.int32(border_value)))
    as_float = _float32_exact_for(dtype_name(video.dtype), taps, shape)
    acc_type = "float" if as_float else "int"
    fn = cuda_function(__name__, f"portcv_convolve3d<{in_type},{acc_type},{kw},{xs}>")
    out = cupy.empty(lead + (f_count, t_out, h, w), dtype=cupy.int32)
    fn(grid, _CUDA_BLOCK,
       (padded, out, np.int32(tp), np.int32(hp), np.int32(wp), np.int32(pitch), np.int32(t_out), np.int32(h),
        np.int32(w),
        np.int32(kt), np.int32(kh), np.int32(f_count), np.int32(t_blocks), device_constant(taps)),
       shared_mem=4 * n_taps)
    return out


#: Kernel spectra kept on a GPU (per device, kernel and FFT size): a k = 15 kernel's is 50-60 MB
#: at the article's size, so only the last few.
_SPECTRA_KEPT = 4


@functools.lru_cache(maxsize=_SPECTRA_KEPT)
def _kernel_spectra_cupy(taps: Taps, shape: tuple, sizes: tuple, device_id: int) -> Any:
    """cuFFT's float64 spectrum of the kernel bank as the FFT methods multiply it: over the last
    two axes of each time slice flipped in space (``hybrid``, ``len(sizes) == 2``) or over all
    three axes of the kernel flipped in time too (``fft``)."""
    import cupy

    w4 = _taps_array(taps, shape)
    axes = tuple(range(-len(sizes), 0))
    flipped = w4[:, ::-1, ::-1, ::-1] if len(sizes) == 3 else w4[:, :, ::-1, ::-1]
    return cupy.fft.rfftn(cupy.asarray(np.ascontiguousarray(flipped, dtype=np.float64)), s=sizes, axes=axes)


class _CupyGeometry(NamedTuple):
    """Shapes of one call of the CuPy FFT methods: the leading (batch) axes, their product, the
    padded (T, H, W) and the output frames, rows and columns of each filter."""

    lead: tuple
    planes: int
    padded: tuple
    t_out: int
    h: int
    w: int
    halo: tuple  # (time, rows, columns) of padding before the first sample

    @classmethod
    def of(cls, video: Any, shape: tuple, time_mode: str) -> _CupyGeometry:
        _, kt, kh, kw = shape
        tp, hp, wp = padded_shape(video.shape, shape[1:], time_mode)[-3:]
        lead = tuple(video.shape[:-3])
        return cls(lead, math.prod(lead), (tp, hp, wp), tp - kt + 1, hp - kh + 1, wp - kw + 1,
                   (kt // 2 if time_mode == "same" else 0, kh // 2, kw // 2))


def _cupy_fft_input(video: Any, g: _CupyGeometry, sizes: tuple, border: str, border_value: int) -> Any:
    """The video padded by ``border`` as :func:`pad_video` pads it, then by zeros to the FFT
    lengths ``sizes`` (T2, H2, W2), as one float64 array (planes, T2, H2, W2): one launch."""
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    t, h, w = video.shape[-3:]
    tp, hp, wp = g.padded
    planes = g.planes
    t2, h2, w2 = sizes
    out = cupy.empty((planes, t2, h2, w2), dtype=cupy.float64)
    rows = planes * t2 * h2
    fn = cuda_function(__name__, f"portcv_convolve3d_to_fft<{_CUDA_INPUT[dtype_name(video.dtype)]}>")
    fn(*launch_1d(rows * 256),  # a block per row
       (cupy.ascontiguousarray(video), out, np.int64(rows), np.int32(t), np.int32(h), np.int32(w), np.int32(tp),
        np.int32(hp), np.int32(wp), np.int32(t2), np.int32(h2), np.int32(w2),
        *(np.int32(v) for v in g.halo), np.int32(BORDER_CODE[border]), np.int32(border_value)))
    return out


def _cupy_round_into(out: Any, y: Any, *, groups: int, t_out: int, src_frames: int, t_off: int, y0: int, x0: int,
                     dst_frames: int, dst_off: int) -> None:
    """``out``'s frames ``dst_off .. dst_off + t_out`` of each of ``groups`` groups: the nearest
    integers of ``y``'s frames ``t_off ..`` from row ``y0`` and column ``x0`` (one launch)."""
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    h2, w2 = y.shape[-2:]
    h, w = out.shape[-2:]
    rows = groups * t_out * h
    fn = cuda_function(__name__, "portcv_convolve3d_round")
    fn(*launch_1d(rows * 256),  # a block per row
       (cupy.ascontiguousarray(y), out, np.int64(rows), np.int32(t_out), np.int32(src_frames), np.int32(t_off),
        np.int32(h2), np.int32(w2), np.int32(y0), np.int32(x0), np.int32(dst_frames), np.int32(dst_off),
        np.int32(h), np.int32(w)))


def _inverts_kept_frames(t_out: int, t2: int) -> bool:
    """Whether CuPy's 3-D FFT method inverts along time first and then only the kept frames in
    2-D (the same inverse transform, its last step cut to the 'valid' frames) instead of the whole
    3-D inverse: when fewer than half the frames are kept. The inverse along a middle axis costs
    CuPy transposing copies; measured in batches of Table 1's clips it pays at k = 9 and 15 (4 of
    12 and 18 frames kept) and not at k = 5 (4 of 8; docs/benchmarks.md, "Figures behind the
    kernels' choices")."""
    return 2 * t_out < t2


@convolve3d_fft_kernel.override("cupy")
def _convolve3d_fft_cupy(video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                         time_mode: str) -> Any:
    import cupy

    from ..backends.cupy import current_device_id

    g = _CupyGeometry.of(video, shape, time_mode)
    f_count, kt, kh, kw = shape
    tp, t_out, h, w = g.padded[0], g.t_out, g.h, g.w
    sizes = fft_shape(g.padded, 3)
    spectrum = cupy.fft.rfftn(_cupy_fft_input(video, g, sizes, border, border_value), axes=(-3, -2, -1))
    spectra = _kernel_spectra_cupy(taps, shape, sizes, current_device_id())
    out = cupy.empty(g.lead + (f_count, t_out, h, w), dtype=cupy.int32)
    for f in range(f_count):
        product = spectrum * spectra[f]
        if _inverts_kept_frames(t_out, sizes[0]):
            kept = cupy.fft.ifft(product, axis=-3)[:, kt - 1:tp]
            y, src_frames, t_off = cupy.fft.irfft2(kept, s=sizes[1:]), t_out, 0
        else:
            y, src_frames, t_off = cupy.fft.irfftn(product, s=sizes, axes=(-3, -2, -1)), sizes[0], kt - 1
        _cupy_round_into(out, y, groups=g.planes, t_out=t_out, src_frames=src_frames, t_off=t_off, y0=kh - 1,
                         x0=kw - 1, dst_frames=f_count * t_out, dst_off=f * t_out)
    return out


@convolve3d_hybrid_kernel.override("cupy")
def _convolve3d_hybrid_cupy(video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                            time_mode: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, current_device_id

    g = _CupyGeometry.of(video, shape, time_mode)
    f_count, kt, kh, kw = shape
    (tp, hp, wp), planes, t_out, h, w = g.padded, g.planes, g.t_out, g.h, g.w
    h2, w2 = fft_shape((hp, wp), 2)
    frames = cupy.fft.rfft2(_cupy_fft_input(video, g, (tp, h2, w2), border, border_value))
    spectra = _kernel_spectra_cupy(taps, shape, (h2, w2), current_device_id())
    bins = h2 * (w2 // 2 + 1)
    runs = -(-t_out // 4)  # C3_SPECTRAL_RUN output frames a thread
    jobs = planes * f_count * runs
    summed = cupy.empty((planes, f_count, t_out, h2, w2 // 2 + 1), dtype=cupy.complex128)
    fn = cuda_function(__name__, "portcv_convolve3d_spectral_sum")
    fn((-(-bins // 256), min(jobs, 65535)), (256,),
       (cupy.ascontiguousarray(frames), cupy.ascontiguousarray(spectra), summed, np.int64(jobs), np.int32(tp),
        np.int32(t_out), np.int32(kt), np.int32(f_count), np.int32(bins), np.int32(runs)))
    del frames
    y = cupy.fft.irfft2(summed, s=(h2, w2))
    out = cupy.empty(g.lead + (f_count, t_out, h, w), dtype=cupy.int32)
    _cupy_round_into(out, y, groups=planes * f_count, t_out=t_out, src_frames=t_out, t_off=0, y0=kh - 1, x0=kw - 1,
                     dst_frames=t_out, dst_off=0)
    return out


@convolve3d_direct_kernel.override(
    "jax", supports="max abs(video) * sum abs(kernel) < 2**24 (float32 convolution), else within the FFT bound (float64 FFT)")
def _convolve3d_direct_jax(video: Any, *, taps: tuple, shape: tuple, border: str, border_value: int,
                           time_mode: str) -> Any:
    # XLA has no integer convolution on the GPU, and the portable code (one slice per tap) makes
    # a program of k**3 operations: where float32 is exact, a Pallas kernel on a GPU (up to
    # k = 9) or XLA's float32 convolution, else the float64 FFT (same bits by its bound).
    padded = pad_video(backend().xp, video, shape[1:], border, border_value, time_mode)
    w4 = _taps_array(taps, shape)
    if _float32_exact_for(dtype_name(padded.dtype), taps, shape):
        if backend().pallas_usable:
            conv = pallas_conv3d(tuple(padded.shape), shape)
            if conv is not None:
                return conv(padded, w4.astype(np.float32))
        return _jax_conv()(padded, w4.astype(np.float32))
    if _fft_error_bound(padded.dtype, tuple(padded.shape), w4, "fft") < FFT_BOUND_LIMIT:
        return convolve3d_fft_kernel.portable_for(backend())(video, taps=taps, shape=shape, border=border,
                                                             border_value=border_value, time_mode=time_mode)
    return NotImplemented


#: Pallas convolution: a program makes `frames` output frames of a `rows` x `cols` tile (powers of
#: two, as Triton's blocks must be) with `warps` warps, chosen by the kernel's width: the first
#: entry whose kw bound is at least kw: the fastest of a GPU sweep of the article's clips in
#: batches (docs/benchmarks.md, "Figures behind the kernels' choices").
PALLAS_TILES = ((5, (4, 16, 128, 8)), (31, (4, 4, 128, 8)))


def pallas_tile(kw: int) -> tuple[int, int, int, int]:
    """``(frames, rows, cols, warps)`` of the Pallas program for kernels kw wide."""
    return next(tile for bound, tile in PALLAS_TILES if kw <= bound)


#: The program is unrolled over (frames + kt - 1) x kw shifted loads; its compile time grows
#: with them (6 s at k = 9, over a minute at k = 15), so larger kernels keep XLA's convolution.
PALLAS_MAX_LOADS = 108


@functools.lru_cache(maxsize=None)
def pallas_conv3d(shape: tuple, kernel_shape: tuple, interpret: bool = False) -> Any:
    """Jitted exact 3-D correlation of a padded volume ``(..., Tp, Hp, Wp)`` with float32 taps
    ``(F, kt, kh, kw)`` by a Pallas (Triton) kernel -> ``(..., F, T, H, W)`` int32, or ``None``
    where the grid would not fit (more than 65,535 programs on a grid axis) or the program would be
    too large (PALLAS_MAX_LOADS). Its caller checks :attr:`~portcv.backends.Backend.pallas_usable` first.

    XLA's float32 convolution of one channel (cuDNN) runs far below the GPU's multiply-add rate
    at small k. Here a program keeps a few output frames of one tile in registers (float32:
    the caller checked that every partial sum is an integer below 2**24, so every product and
    add is exact in any order) and walks the input frames they need: each shifted input tile,
    loaded once, feeds every output frame whose time tap reaches it (the CUDA kernel's
    streaming). Masked loads and stores keep the tiles that overhang the volume inside it, so
    the padded video is read as it is and the output written at its size, with no copies.
    """
    import jax
    import jax.numpy as jnp

    import jax.experimental.pallas as pl
    import jax.experimental.pallas.triton as plgpu

    from ..backends.jax import jit

    lead, (tp, hp, wp) = shape[:-3], shape[-3:]
    planes = math.prod(lead)
    f_count, kt, kh, kw = kernel_shape
    t_out, h, w = tp - kt + 1, hp - kh + 1, wp - kw + 1
    tf, bh, bw, warps = pallas_tile(kw)
    t_blocks, y_blocks, x_blocks = -(-t_out // tf), -(-h // bh), -(-w // bw)
    grid = (y_blocks * x_blocks, t_blocks, planes * f_count)
    if min(planes, t_out, h, w) <= 0 or max(grid[1:]) > 65535 or grid[0] > 2**31 - 1:
        return None
    if (tf + kt - 1) * kw > PALLAS_MAX_LOADS:
        return None
    # Where the tiles overhang the volume, masks keep loads and stores inside it (masked-out
    # samples read as 0 and feed only outputs that are not stored): no padded copy of the input,
    # no cut copy of the output. Each axis gets a mask only where its tiles overhang.
    rows_overhang, cols_overhang = y_blocks * bh + kh - 1 > hp, x_blocks * bw + kw - 1 > wp
    frames_overhang = t_blocks * tf > t_out

    def program(x_ref: Any, k_ref: Any, o_ref: Any) -> None:
        tile, tb, pf = pl.program_id(0), pl.program_id(1), pl.program_id(2)
        plane, f = pf // f_count, pf % f_count
        t0, y0, x0 = tb * tf, (tile // x_blocks) * bh, (tile % x_blocks) * bw
        rows = jnp.arange(bh)[:, None]
        cols = jnp.arange(bw)[None, :]

        def inside(y: Any, x: Any, y_size: int, x_size: int, rows_masked: bool, cols_masked: bool) -> Any:
            mask = None
            if rows_masked:
                mask = rows + y < y_size
            if cols_masked:
                col_mask = cols + x < x_size
                mask = col_mask if mask is None else mask & col_mask
            return mask

        def row_tap(n: Any, acc: tuple) -> tuple:
            acc = list(acc)
            # Row n's masks, one per column tap, the same for every input frame.
            masks = [inside(y0 + n, x0 + m, hp, wp, rows_overhang, cols_overhang) for m in range(kw)]
            for tt in range(tf + kt - 1):  # input frame t0 + tt
                frame = t0 + tt
                if frames_overhang:
                    frame = jnp.minimum(frame, tp - 1)  # frames past the end feed only uncut outputs
                for m, mask in enumerate(masks):
                    window = plgpu.load(x_ref.at[plane, frame, pl.ds(y0 + n, bh), pl.ds(x0 + m, bw)], mask=mask,
                                        other=0 if mask is not None else None).astype(jnp.float32)
                    for j in range(max(0, tt - kt + 1), min(tf, tt + 1)):  # output frames reaching it
                        acc[j] = acc[j] + k_ref[f, tt - j, n, m] * window
            return tuple(acc)

        zeros = tuple(jnp.zeros((bh, bw), jnp.float32) for _ in range(tf))
        acc = jax.lax.fori_loop(0, kh, row_tap, zeros)
        store_mask = inside(y0, x0, h, w, y_blocks * bh > h, x_blocks * bw > w)
        for j in range(tf):
            def store(j: int = j) -> None:
                plgpu.store(o_ref.at[plane, f, t0 + j, pl.ds(y0, bh), pl.ds(x0, bw)], acc[j].astype(jnp.int32),
                            mask=store_mask)
            if frames_overhang and j:
                pl.when(t0 + j < t_out)(store)
            else:
                store()

    call = pl.pallas_call(
        program, grid=grid, interpret=interpret,
        out_shape=jax.ShapeDtypeStruct((planes, f_count, t_out, h, w), jnp.int32),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1))

    def run(padded: Any, taps: Any) -> Any:
        y = call(jnp.reshape(padded, (planes, tp, hp, wp)), jnp.asarray(taps, jnp.float32))
        return jnp.reshape(y, lead + (f_count, t_out, h, w))

    return jit(run)


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
