"""CuPy overrides of the 3-D convolution's kernels (``convolve3d_direct``, ``convolve3d_fft``,
``convolve3d_hybrid``), running ``_convolve3d_cuda.cu``. ``portcv.volume`` imports this module,
which registers the overrides."""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .._border import BORDER_CODE
from ._convolve3d import (
    MAX_SIDE, Taps, _float32_exact_for, _taps_array, convolve3d_direct_kernel,
    convolve3d_fft_kernel, convolve3d_hybrid_kernel, dtype_name, fft_shape, padded_shape,
)

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
