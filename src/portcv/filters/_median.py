"""The median filter kernel: the k x k median of each channel of a uint8 image, exact everywhere.

The Webcam Streaming & Filters report's tiled median filter (section 6.5): every output pixel is the middle value
of its sorted k x k window. The portable version (NumPy reference, JAX under jit) finds that
value by counting instead of sorting: for uint8 data the median of ``N = k*k`` values
(``N`` odd) is the largest ``v`` with ``#{x < v} <= N // 2``, found bit by bit from the top
(8 steps, each a count over the window: ``k*k`` compares of static slices of one padded
image, which XLA fuses into elementwise passes under ``jit``). The CuPy override runs
``_median.cu``: generated min/max circuits that sort the pixels shared by a tile's windows
once, for k = 3, 5, and Huang's sliding histogram (4 outputs per histogram) for k = 7..15. The
JAX override runs the same circuits for k = 3, 5 as array operations (:func:`tile_circuit`),
each gate one ``minimum``/``maximum`` over every tile at once; other sizes use the portable count.
The NumPy override runs them too, on planes deinterleaved so that every gate is one contiguous
SIMD pass over a band of tiles (:func:`_circuit_program`); where numba is installed, as
compiled loops instead: ksize 3, 5 as the generated circuit of a 1 x 2 tile, straight-line code
vectorized along each pair of rows (``_median_tiles_numba.py``), and ksize 7 to 15 as Huang's sliding histogram
along each row (``huang_rows``) instead of the portable count.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import _border, _validate
from .._border import BORDER_CODE, pad_axis
from .._kernel import kernel
from ..backends import backend
from ..backends.jax import jit
from ._median_networks import CIRCUITS, TILE_X, TILE_Y

#: Window sizes: odd, 3 to 15 (a 15 x 15 window holds 225 values, so counts fit uint8).
MIN_KSIZE, MAX_KSIZE = 3, 15

# Launch geometry of _median.cu (its #defines).
_NETWORK_THREADS, _NETWORK_TILE_PX, _NETWORK_TILE_H = 128, 128, 32  # a block: 128 pixels x 32 rows
_HISTOGRAM_THREADS = 32  # a block (one warp): 4 * groups pixels x HISTOGRAM_STRIP rows
_HISTOGRAM_GROUPS = {1: 32, 2: 16, 3: 8, 4: 8}  # 4-pixel groups per block (HistogramGroups<C>)
#: The CUDA source both GPU backends run; its circuit blocks are generated
#: (``python -m tools.regenerate median-networks``).
MEDIAN_CU = Path(__file__).with_name("_median.cu")
#: Window sizes with a tile circuit in _median.cu.
CIRCUIT_KSIZES = (3, 5)


@kernel("median_filter")
def median_filter_kernel(
    xp: Any, img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int
) -> Any:
    """Portable k x k median: the k*k shifted views of one padded image, an 8-step bitwise search."""
    k = ksize
    rank = k * k // 2  # 0-based rank of the median; k*k <= 225 so every count fits uint8
    y_axis = img.ndim - (3 if has_channels else 2)
    x_axis = y_axis + 1
    height, width = img.shape[y_axis], img.shape[x_axis]
    tail = (slice(None),) if has_channels else ()
    # One padded copy (static slices + concat, no gather); every window value is then a static
    # slice of it, so under jit the 8 steps fuse into elementwise passes with no k*k array.
    x = pad_axis(xp, img, x_axis, k // 2, k - 1 - k // 2, border, border_value)
    x = pad_axis(xp, x, y_axis, k // 2, k - 1 - k // 2, border, border_value)
    views = [x[(..., slice(dy, dy + height), slice(dx, dx + width)) + tail]
             for dy in range(k) for dx in range(k)]
    median = xp.zeros(img.shape, dtype=xp.uint8)
    for bit in (128, 64, 32, 16, 8, 4, 2, 1):
        # Invariant: median <= true median < median + 2*bit. The candidate c = median | bit
        # is <= the true median iff fewer than rank + 1 window values lie below c.
        candidate = median | bit
        below = None
        for view in views:  # Python loops only over taps and bits
            count = xp.astype(view < candidate, xp.uint8)
            below = count if below is None else below + count  # <= k*k <= 225: no uint8 overflow
        median = xp.where(below <= rank, candidate, median)
    return median


def _define(text: str, name: str) -> int:
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


def tile_circuit(ksize: int) -> tuple[int, int, tuple[tuple[str, int, int, int], ...], dict[tuple[int, int], int]]:
    """The min/max circuit for a ``ksize`` x ``ksize`` window: ``(tx, ty, gates, outputs)``.

    It computes the medians of a ``tx`` x ``ty`` tile of outputs from the tile's
    ``(tx + k - 1) x (ty + k - 1)`` footprint: input value ``j * (tx + k - 1) + f`` is footprint
    row ``j``, column ``f``; each gate ``(kind, d, a, b)`` (kind ``'MIN'`` or ``'MAX'``) sets value
    ``d`` from values ``a`` and ``b``, in order; ``outputs[(x, y)]`` is the value holding the
    median of output ``(x, y)``. ``tools/generators/median_networks.py`` generates these tables and the
    same circuits in ``_median.cu``; the tests prove every output with the 0-1 principle and
    check that both forms agree.
    """
    gates, outputs = CIRCUITS[ksize]
    return TILE_X, TILE_Y, gates, outputs


def circuit_median(
    xp: Any, img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int,
    materialize: Callable[[tuple], tuple] = lambda planes: planes,
) -> Any:
    """The k x k median (k in :data:`CIRCUIT_KSIZES`) by :func:`tile_circuit`, in array operations.

    Each circuit input is one strided view of the padded image (footprint cell ``(j, f)`` of
    every tile at once), each gate one elementwise ``minimum``/``maximum`` of two such arrays, and
    the ``tx * ty`` outputs are interleaved back into the image: about 66 min/max per pixel for
    k = 5, against 200 compares and adds for the bitwise count. Exact: it only selects values.
    ``img`` is not empty (the public functions refuse empty images; an empty tile grid would make
    the strided views' ends negative). ``materialize`` receives the ``tx * ty`` output planes
    before they are interleaved (JAX: an optimization barrier, so that XLA computes the gates
    once instead of once per output pixel inside the interleaving copy).
    """
    tx, ty, gates, outputs = tile_circuit(ksize)
    k = ksize
    if has_channels:  # channels become leading frames
        img = xp.moveaxis(img, -1, -3)
    height, width = img.shape[-2], img.shape[-1]
    rows, cols = -(-height // ty), -(-width // tx)  # tiles
    x = pad_axis(xp, img, -1, k // 2, k - 1 - k // 2, border, border_value)
    x = pad_axis(xp, x, -2, k // 2, k - 1 - k // 2, border, border_value)
    # Whole tiles: the extra cells only feed outputs that are cropped.
    x = pad_axis(xp, x, -1, 0, cols * tx - width, "constant", 0)
    x = pad_axis(xp, x, -2, 0, rows * ty - height, "constant", 0)
    fw = tx + k - 1
    value: dict[int, Any] = {}
    for j in range(ty + k - 1):
        for f in range(fw):
            value[j * fw + f] = x[..., j: j + ty * (rows - 1) + 1: ty, f: f + tx * (cols - 1) + 1: tx]
    for kind, d, a, b in gates:
        value[d] = (xp.minimum if kind == "MIN" else xp.maximum)(value[a], value[b])
    planes = materialize(tuple(value[outputs[(ox, oy)]] for oy in range(ty) for ox in range(tx)))
    tile_rows = [xp.stack(planes[oy * tx: (oy + 1) * tx], axis=-1) for oy in range(ty)]
    out = xp.stack(tile_rows, axis=-3)  # (..., rows, ty, cols, tx)
    out = xp.reshape(out, out.shape[:-4] + (rows * ty, cols * tx))[..., :height, :width]
    return xp.moveaxis(out, -3, -1) if has_channels else out


@functools.lru_cache(maxsize=None)
def _circuit_median_jax(ksize: int, has_channels: bool, border: str, border_value: int) -> Any:
    import jax

    xp = backend().xp  # called from the JAX override: the active backend is of JAX's family
    return jit(functools.partial(circuit_median, xp, ksize=ksize, has_channels=has_channels, border=border,
                                 border_value=border_value, materialize=jax.lax.optimization_barrier))


@median_filter_kernel.override(
    "jax", supports="ksize 3 and 5 (tile circuits; uint8 on the CPU: the NumPy circuits through a host callback)")
def _median_filter_jax(img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int) -> Any:
    if ksize not in CIRCUIT_KSIZES:
        return NotImplemented
    if backend().runs_on_host and img.dtype == np.uint8:
        # XLA:CPU does not fuse the circuit's gates into one loop; NumPy runs them as cache-sized
        # passes, several times faster (docs/benchmarks.md).
        from ..backends.jax import host_call

        return host_call(median_filter_kernel, img, ksize=ksize, has_channels=has_channels, border=border,
                         border_value=border_value)
    return _circuit_median_jax(ksize, has_channels, border, border_value)(img)


@functools.lru_cache(maxsize=None)
def _circuit_program(ksize: int) -> tuple[int, int, tuple[tuple[bool, int, int, int], ...], tuple[int, ...]]:
    """:func:`tile_circuit` with its values mapped onto reusable buffers, for the NumPy override.

    Returns ``(inputs, buffers, program, outputs)``: operand ``i < inputs`` is footprint value
    ``i``, operand ``inputs + b`` is buffer ``b``; each step ``(is_min, out, a, b)`` is one
    gate. A buffer is reused once the value it holds has had its last reader (the circuit's
    values are single-assignment: 1062 of them for k = 5, at most 95 alive at once), so a band's
    buffers stay in the core's cache. A gate may write over one of its own operands: NumPy's
    elementwise min/max read each element before writing it.
    """
    tx, ty, gates, outputs = tile_circuit(ksize)
    inputs = (ty + ksize - 1) * (tx + ksize - 1)
    last = {}
    for i, (_, d, a, b) in enumerate(gates):
        last[a] = last[b] = i
    for o in outputs.values():
        last[o] = len(gates)
    where = {s: s for s in range(inputs)}  # value -> operand
    free: list[int] = []
    buffers = 0
    program = []
    for i, (kind, d, a, b) in enumerate(gates):
        operands = (where[a], where[b])
        for v in {a, b}:
            if last[v] == i and where[v] >= inputs:
                free.append(where[v])
        if free:
            out = free.pop()
        else:
            out, buffers = inputs + buffers, buffers + 1
        where[d] = out
        program.append((kind == "MIN", out) + operands)
    return inputs, buffers, tuple(program), tuple(where[outputs[(ox, oy)]] for oy in range(ty) for ox in range(tx))


#: Output rows per band of the compiled circuits (ksize 3, 5), the bands spread over the threads.
NUMBA_CIRCUIT_ROWS = 32


def _median_compiled(img: np.ndarray, k: int, has_channels: bool, border: str, border_value: int) -> np.ndarray:
    """ksize 3 and 5 compiled: each plane padded by the border rule once (``pad_plane``), then
    the generated circuit of a 1 x 2 tile (``_median_tiles_numba.rows_k*``: two output rows per
    pass, one vectorized loop along them) over bands of rows on the threads. The height is
    rounded up to whole passes; the extra row, padded by the same rule, is cropped."""
    from .._border import border_indices
    from ..backends.numpy import run_bands
    from . import _median_tiles_numba as tiles
    from ._median_numba import pad_plane

    rows_of = getattr(tiles, f"rows_k{k}")
    frames = np.moveaxis(img, -1, -3) if has_channels else img
    shape = frames.shape
    height, width = shape[-2:]
    planes = img.size // (height * width)
    rows = -(-height // tiles.ROWS) * tiles.ROWS
    src = np.ascontiguousarray(frames).reshape(planes * height, width)
    xmap = border_indices(width, k // 2, k - 1 - k // 2, border).astype(np.int32)
    ymap = border_indices(height, k // 2, rows + k - 1 - height - k // 2, border).astype(np.int32)
    padded = np.empty((planes, rows + k - 1, width + k - 1), np.uint8)
    out = np.empty((planes, rows, width), np.uint8)
    run_bands(lambda p: pad_plane(src, padded[p], xmap, ymap, border_value, k // 2, p, height), list(range(planes)))
    step = max(1, NUMBA_CIRCUIT_ROWS // tiles.ROWS) * tiles.ROWS
    run_bands(lambda item: rows_of(padded[item[0]], out[item[0]], item[1], min(item[1] + step, rows)),
              [(p, y) for p in range(planes) for y in range(0, rows, step)])
    result = out[:, :height].reshape(shape)
    return np.moveaxis(result, -3, -1) if has_channels else result


#: Output rows per band of the compiled sliding-histogram median (ksize 7 to 15).
NUMBA_HUANG_ROWS = 64


def _median_huang(img: np.ndarray, k: int, has_channels: bool, border: str, border_value: int) -> np.ndarray:
    """ksize 7 to 15 compiled (``_median_numba.huang_rows``): each plane padded by the border
    rule once, then Huang's sliding histogram along every row, bands of rows on the threads."""
    from .._border import border_indices
    from ..backends.numpy import run_bands
    from ._median_numba import huang_rows, pad_plane

    frames = np.moveaxis(img, -1, -3) if has_channels else img
    shape = frames.shape
    height, width = shape[-2:]
    planes = img.size // (height * width)
    src = np.ascontiguousarray(frames).reshape(planes * height, width)
    xmap = border_indices(width, k // 2, k - 1 - k // 2, border).astype(np.int32)
    ymap = border_indices(height, k // 2, k - 1 - k // 2, border).astype(np.int32)
    padded = np.empty((planes, height + k - 1, width + k - 1), np.uint8)
    out = np.empty((planes, height, width), np.uint8)
    run_bands(lambda p: pad_plane(src, padded[p], xmap, ymap, border_value, k // 2, p, height), list(range(planes)))
    step = max(1, NUMBA_HUANG_ROWS)
    run_bands(lambda item: huang_rows(padded[item[0]], out[item[0]], k, item[1], min(item[1] + step, height)),
              [(p, y) for p in range(planes) for y in range(0, height, step)])
    result = out.reshape(shape)
    return np.moveaxis(result, -3, -1) if has_channels else result


@median_filter_kernel.override(
    "numpy", supports=("uint8, ksize 3 and 5 (tile circuits), with numba every ksize (7 to 15: Huang's sliding "
                       "histogram); others: the portable count"))
def _median_filter_numpy(img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int) -> Any:
    from ..backends.numpy import compiled, row_bands, run_bands, scratch

    xp = backend().xp
    if img.dtype == np.uint8 and img.size and compiled():
        if ksize in CIRCUIT_KSIZES:
            return _median_compiled(img, ksize, has_channels, border, border_value)
        return _median_huang(img, ksize, has_channels, border, border_value)
    if ksize not in CIRCUIT_KSIZES or img.dtype != np.uint8 or img.size == 0:
        return median_filter_kernel.portable(xp, img, ksize=ksize, has_channels=has_channels, border=border,
                                             border_value=border_value)
    tx, ty, _, _ = tile_circuit(ksize)
    inputs, buffers, program, outputs = _circuit_program(ksize)
    k = ksize
    frames = xp.moveaxis(img, -1, -3) if has_channels else img  # channels become frames
    shape = frames.shape
    height, width = shape[-2:]
    planes = img.size // (height * width)
    rows, cols = -(-height // ty), -(-width // tx)  # tiles
    # Tile columns per row of the deinterleaved planes (room for the footprint's extra columns),
    # and rows (room for its extra rows, plus one so every flat window below stays in bounds).
    span, depth = cols + (k - 1) // tx + 1, rows + (k - 1) // ty + 2
    # Padded by the border rule as far as whole tiles need; cells past k // 2 only feed cropped outputs.
    x = pad_axis(xp, frames, -1, k // 2, span * tx - width - k // 2, border, border_value)
    x = pad_axis(xp, x, -2, k // 2, depth * ty - height - k // 2, border, border_value)
    # Deinterleaved: plane[b, a][p, r * span + c] = x[p, r * ty + b, c * tx + a]. Footprint cell
    # (j, f) of every tile of a band of tile rows is then one contiguous slice, so each gate is
    # one SIMD pass of NumPy's min/max instead of a strided one (circuit_median's views).
    plane = np.ascontiguousarray(np.reshape(x, (planes, depth, ty, span, tx)).transpose(2, 4, 0, 1, 3))
    plane = plane.reshape(ty, tx, planes, depth * span)
    out = np.empty((planes, rows, ty, cols, tx), np.uint8)

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        m = (r1 - r0) * span
        operands = []
        for j in range(ty + k - 1):
            for f in range(tx + k - 1):
                at = (r0 + j // ty) * span + f // tx
                operands.append(plane[j % ty, f % tx, p, at: at + m])
        operands.extend(scratch("median-circuit", (buffers, m), np.uint8))
        for is_min, o, a, b in program:
            (np.minimum if is_min else np.maximum)(operands[a], operands[b], out=operands[o])
        for i, o in enumerate(outputs):
            oy, ox = divmod(i, tx)
            out[p, r0:r1, oy, :, ox] = operands[o].reshape(r1 - r0, span)[:, :cols]

    # One thread: each band makes about a thousand short NumPy calls, and two threads contending
    # for the GIL between them were slower than one (docs/benchmarks.md).
    run_bands(band, row_bands(rows, span, planes=planes, target=1 << 15), threads=1)
    result = out.reshape(planes, rows * ty, cols * tx)[:, :height, :width].reshape(shape)
    return np.moveaxis(result, -3, -1) if has_channels else result


@functools.lru_cache(maxsize=None)
def _histogram_strip() -> int:
    """Rows per block of _median.cu's sliding-histogram kernel (its HISTOGRAM_STRIP)."""
    return _define(MEDIAN_CU.read_text(), "HISTOGRAM_STRIP")


def launch_geometry(ksize: int, height: int, width: int, channels: int, planes: int) -> tuple[str, tuple, int]:
    """``(kernel, grid (x, y, planes), threads per block)`` of _median.cu for this input."""
    if ksize <= 5:
        grid = (-(-width // _NETWORK_TILE_PX), -(-height // _NETWORK_TILE_H), planes)
        return "network", grid, _NETWORK_THREADS
    grid = (-(-width // (4 * _HISTOGRAM_GROUPS[channels])), -(-height // _histogram_strip()), planes)
    return "histogram", grid, _HISTOGRAM_THREADS


@median_filter_kernel.override("cupy", supports="1 to 4 channels; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _median_filter_cupy(img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    channels = img.shape[-1] if has_channels else 1
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    if not 1 <= channels <= 4:
        return NotImplemented
    planes = img.size // (height * width * channels)
    variant, (gx, gy, _), threads = launch_geometry(ksize, height, width, channels, planes)
    if gy > 65535:  # gridDim.y limit (a very tall, narrow image)
        return NotImplemented
    if variant == "network":
        fn = cuda_function(__name__, f"portcv_median_network<{ksize},{channels}>")
    else:
        fn = cuda_function(__name__, f"portcv_median_histogram<{ksize},{channels}>")
    img = cupy.ascontiguousarray(img)
    out = cupy.empty(img.shape, dtype=cupy.uint8)
    args = (np.int32(height), np.int32(width), np.int32(BORDER_CODE[border]), np.int32(border_value))
    src, dst = img.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn((gx, gy, stop - start), (threads,), (src[start:stop], dst[start:stop]) + args)
    return out


def median_filter(
    image: Any,
    ksize: int,
    *,
    border: str = "replicate",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """Median filter: each pixel becomes the middle value of its ``ksize`` x ``ksize`` window.

    The Webcam Streaming & Filters report's tiled median filter (section 6.5, "2D CUDA Tiled Median filter"), per
    channel. With ``N = ksize**2`` window values (``N`` is odd), the output is the value of rank
    ``N // 2`` (0-based) of the sorted window, so it is always one of the input values and
    nothing is rounded. With the default ``border='replicate'`` it equals
    ``cv2.medianBlur(image, ksize)`` bit-for-bit (OpenCV's median replicates the edge pixels).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    ksize : int
        Odd window size, 3 to 15.
    border : {'replicate', 'reflect101', 'constant'}
        How pixels outside the image are made. ``'replicate'`` is OpenCV's median border; the
        report's listing reads zeros outside the image, which is ``border='constant'`` with
        ``border_value=0``.
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`: each channel is filtered on its own.

    Returns
    -------
    uint8 array of the same shape.

    Notes
    -----
    ``out[y, x] = sorted(img[y + j, x + i] for |i|, |j| <= ksize // 2)[N // 2]``.

    The portable code (NumPy, JAX) counts instead of sorting: for uint8 the median is the largest
    ``v`` with ``#{window values < v} <= N // 2``, found one bit at a time from bit 7 down (8
    counting steps, exact). On CuPy, ``ksize`` 3 and 5 run a min/max selection network per pixel
    (19 and 99 exchanges) and 7 to 15 run Huang's sliding 256-bin histogram, where the report
    bubble-sorted every window.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[1, 7, 3], [2, 89, 6], [4, 1, 6]], np.uint8)  # the report's table 22
    >>> portcv.to_numpy(portcv.filters.median_filter(img, 3))
    array([[2, 3, 6],
           [2, 4, 6],
           [4, 4, 6]], dtype=uint8)
    """
    img = _validate.image(image)
    ksize = _validate.integer(ksize, "ksize", low=MIN_KSIZE, high=MAX_KSIZE)
    if ksize % 2 == 0:
        raise ValueError(f"ksize must be odd, got {ksize}")
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    return median_filter_kernel(
        img, ksize=ksize, has_channels=has_channels, border=border, border_value=border_value
    )

