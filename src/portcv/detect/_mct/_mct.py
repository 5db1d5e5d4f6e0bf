"""The MCT kernels: the modified census transform of Froeba and Ernst, as Tek's thesis uses it
(section 2.1.1), and the MCT cascade's stage sums over a plan of windows (section 3.1).

The portable versions (the reference) and the NumPy overrides are here; ``_mct_cuda.py`` and
``_mct_pallas.py`` register the CuPy and the JAX-on-a-GPU (Pallas) overrides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _border, _validate
from ..._kernel import kernel
from ._cascade_file import LUT_WIDTH

#: MCT codes are 9-bit; 511 (every pixel above the mean) cannot occur.
MCT_CODES = 511
#: ``border=`` values of :func:`mct`: ``'valid'`` (the paper's) and portcv's padding modes.
MCT_BORDERS = ("valid",) + _border.BORDERS


@kernel("mct")
def mct_kernel(xp: Any, img: Any) -> Any:
    """uint16 MCT codes of the valid interior of ``(..., H, W)`` uint8 (H, W >= 3): ``(..., H-2, W-2)``.

    ``S`` is the 3x3 sum (<= 9 * 255 = 2295, int16); bit ``8 - k`` of the code is ``9 * I_k > S``
    for the raster index ``k`` of the 3x3 (0 top-left, 4 centre, 8 bottom-right): the thesis's
    "pixels compared in row-major order", concatenated most significant first. ``9 * I > S`` is
    ``I > mean`` without a division (exact on every backend).
    """
    x = xp.astype(img, xp.int16)
    h, w = x.shape[-2], x.shape[-1]
    taps = [x[..., dy : h - 2 + dy, dx : w - 2 + dx] for dy in range(3) for dx in range(3)]
    total = taps[0]
    for t in taps[1:]:
        total = total + t
    code = xp.zeros(total.shape, dtype=xp.uint16)
    for k, t in enumerate(taps):
        code = code + xp.astype(9 * t > total, xp.uint16) * (1 << (8 - k))
    return code


@mct_kernel.override("numpy", supports="uint8 images (any leading batch dims)")
def _mct_numpy(img: Any) -> Any:
    # Bands of output rows over the host threads, each through reused uint16 buffers that stay in
    # the core's cache: S as uint16 (<= 2295), 9 * I_k as uint16, and the code built most
    # significant bit first (code = 2 * code + [9 I_k > S]). The same comparisons as the portable
    # version, so the same bits.
    import numpy as np

    from ...backends.numpy import compiled, row_bands, run_bands, scratch

    x = np.asarray(img)
    if x.dtype != np.uint8:
        return NotImplemented
    h, w = x.shape[-2], x.shape[-1]
    planes = x.reshape((-1, h, w))
    out = np.empty(x.shape[:-2] + (h - 2, w - 2), np.uint16)
    flat = out.reshape((-1, h - 2, w - 2))
    if compiled():
        from ._mct_numba import mct_rows

        if flat.size:
            source = np.ascontiguousarray(planes)
            run_bands(lambda item: mct_rows(source[item[0]], flat[item[0]], item[1], item[2]),
                      row_bands(h - 2, w - 2, planes=flat.shape[0], target=1 << 16))
        return out

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        m, ow = r1 - r0, w - 2
        wide = scratch("mct_wide", (m + 2, w), np.uint16)  # the band's source rows, widened once
        nine = scratch("mct_nine", (m + 2, w), np.uint16)  # and times nine, once
        np.copyto(wide, planes[p, r0:r1 + 2])
        np.multiply(wide, 9, out=nine)
        total = scratch("mct_total", (m, ow), np.uint16)
        above = scratch("mct_above", (m, ow), np.bool_)
        code = flat[p, r0:r1]
        np.add(wide[0:m, 0:ow], wide[0:m, 1:ow + 1], out=total)
        for dy, dx in [(dy, dx) for dy in range(3) for dx in range(3)][2:]:
            np.add(total, wide[dy:dy + m, dx:dx + ow], out=total)
        code[...] = 0
        for dy in range(3):
            for dx in range(3):
                np.greater(nine[dy:dy + m, dx:dx + ow], total, out=above)
                np.left_shift(code, 1, out=code)
                np.bitwise_or(code, above, out=code)

    if flat.size:
        run_bands(band, row_bands(h - 2, w - 2, planes=flat.shape[0]))
    return out


def mct(image: Any, *, border: str = "valid", border_value: int = 0, channel_axis: Any = "auto") -> Any:
    """Modified census transform: one 9-bit code per pixel from its 3x3 neighbourhood and their mean.

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray image or a batch of them (leading dims), on any backend.
    border : {'valid', 'reflect101', 'replicate', 'constant'}
        ``'valid'`` (default, the paper defines no border): only pixels with a full 3x3
        neighbourhood, output ``(..., H-2, W-2)`` (needs H, W >= 3). The others pad by one pixel
        with portcv's border rule first and give ``(..., H, W)``.
    border_value : int
        Padding value for ``border='constant'`` (0..255; checked whatever the border).
    channel_axis : {"auto", None}
        ``"auto"``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: leading axes are a batch of
        gray frames, whatever their width.

    Returns
    -------
    (..., H-2, W-2) or (..., H, W) uint16 array on the active backend
        Codes in 0..510.

    Notes
    -----
    Froeba and Ernst (FGR 2004) as written in Tek's thesis (section 2.1.1, eq. 2.1-2.2):
    ``Gamma(x) = concat_{y in N(x)} zeta(mean(x), I(y))`` over the 3x3 neighbourhood *including*
    ``x``, ``zeta(a, b) = [a < b]``, in row-major order. portcv fixes the bit order the thesis
    leaves implicit: top-left is bit 8 (the most significant), the centre bit 4, bottom-right
    bit 0; and compares ``9 * I > S`` (S the 3x3 sum) instead of ``I > S / 9``: integer and exact
    on every backend. 511 cannot occur (not every pixel can exceed the mean); a constant patch
    gives 0. The code is invariant under ``a * I + b`` for ``a > 0`` (without clipping).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 0, 0], [0, 9, 0], [0, 0, 9]], np.uint8)
    >>> int(portcv.detect.mct(img)[0, 0])   # centre (bit 4) and bottom-right (bit 0) above the mean
    17
    """
    border = _validate.choice(border, "border", MCT_BORDERS)
    border_value = _validate.integer(border_value, "border_value", low=0, high=255)
    img = _validate.image(image, gray=True, channel_axis=channel_axis)
    if border == "valid":
        if img.shape[-1] < 3 or img.shape[-2] < 3:
            raise ValueError(f"image must be at least 3x3 for border='valid', got shape {tuple(img.shape)}")
    else:
        border, value = _border.check(border, border_value)
        from ...backends import backend

        xp = backend().xp
        img = _border.pad_axis(xp, img, img.ndim - 1, 1, 1, border, value)
        img = _border.pad_axis(xp, img, img.ndim - 2, 1, 1, border, value)
    return mct_kernel(img)


# --------------------------------------------------------------------------------------------
# The cascade's stage sums
# --------------------------------------------------------------------------------------------
#: Largest number of (window x position) gathers one portable step makes: bounds the memory of
#: the 2-D gathers (``cap x chunk`` int32 indices and codes, 16 MB each at this size).
GATHER_ELEMENTS = 1 << 22


@kernel("mct_stage_sums")
def stage_sums_kernel(xp: Any, codes: Any, offsets: Any, position_offsets: Any, lut: Any, *, begin: int,
                      end: int) -> Any:
    """int32 stage sums ``H = sum_k lut[k, codes[offsets + position_offsets[k]]]``, ``k in [begin, end)``.

    ``codes`` is the flat uint16 MCT image of the packed pyramid, ``offsets`` the windows' flat
    code offsets, ``lut`` the flat ``(K * 512,)`` int16 table. Terms are int16 and at most 484
    of them: ``|H| < 2**24``, exact in int32 in any order. The positions are gathered in chunks
    of at most ``GATHER_ELEMENTS / len(offsets)`` (2-D gathers; one position at a time for
    the millions of windows of a first stage).
    """
    n = offsets.shape[0]
    chunk = max(1, min(end - begin, GATHER_ELEMENTS // max(n, 1)))
    total = xp.zeros(n, dtype=xp.int32)
    for k0 in range(begin, end, chunk):
        k1 = min(end, k0 + chunk)
        where = offsets[:, None] + position_offsets[None, k0:k1]
        code = xp.astype(xp.take(codes, xp.reshape(where, (-1,))), xp.int32)
        rows = xp.arange(k0, k1, dtype=xp.int32)[None, :] * LUT_WIDTH
        cost = xp.take(lut, xp.reshape(xp.reshape(code, (n, k1 - k0)) + rows, (-1,)))
        total = total + xp.sum(xp.reshape(xp.astype(cost, xp.int32), (n, k1 - k0)), axis=1, dtype=xp.int32)
    return total


#: Windows per band of the NumPy stage sums: a band's index, code, term and sum buffers (16 bytes
#: a window, 512 KiB) stay in the core's cache across the stage's positions.
STAGE_SUMS_BAND = 1 << 15


def _add_position(codes: np.ndarray, position_offset: int, row: np.ndarray, where: np.ndarray, code: np.ndarray,
                  term: np.ndarray, out: np.ndarray, mode: str = "raise") -> None:
    """``out += row[codes[position_offset + where]]`` through the buffers ``code`` and ``term``:
    one cascade position's int16 terms for a band of windows (the NumPy overrides' inner step)."""
    np.take(codes[position_offset:], where, out=code, mode=mode)
    np.take(row, code, out=term, mode=mode)
    np.add(out, term, out=out)


@stage_sums_kernel.override("numpy")
def _stage_sums_numpy(codes: Any, offsets: Any, position_offsets: Any, lut: Any, *, begin: int, end: int) -> Any:
    # Bands of windows spread over the host threads (NumPy's take and add release the GIL); in a
    # band, position by position with 1-D gathers into reused buffers and an in-place int32 sum:
    # each position reads its 1 KB LUT row and one code per window in ascending order (the
    # windows are sorted). The window offsets are made intp once per band and each position
    # gathers from the codes shifted by its offset (a view), so no per-position index pass or
    # conversion runs (16 % of the stage sums). The same int16 terms in the same order per
    # window, the same exact int32 sums, whichever thread runs a band.
    from ...backends.numpy import compiled, run_bands, scratch

    codes, offsets, position_offsets = np.asarray(codes), np.asarray(offsets), np.asarray(position_offsets)
    rows = np.asarray(lut).reshape(-1, LUT_WIDTH)
    n = offsets.shape[0]
    total = np.zeros(n, np.int32)
    if compiled() and codes.dtype == np.uint16 and rows.dtype == np.int16:
        from ._mct_numba import stage_sums

        where, shifts = offsets.astype(np.int64), position_offsets.astype(np.int64)
        run_bands(lambda a: stage_sums(codes, where[a:a + STAGE_SUMS_BAND], shifts, rows, begin, end,
                                       total[a:a + STAGE_SUMS_BAND]), list(range(0, n, STAGE_SUMS_BAND)))
        return total

    def band(span: tuple[int, int]) -> None:
        a, b = span
        m = b - a
        out = total[a:b]
        where = scratch("mct_where", (m,), np.intp)
        where[...] = offsets[a:b]
        code = scratch("mct_code", (m,), np.uint16)
        term = scratch("mct_term", (m,), np.int16)
        for k in range(begin, end):
            _add_position(codes, int(position_offsets[k]), rows[k], where, code, term, out)

    run_bands(band, [(a, min(n, a + STAGE_SUMS_BAND)) for a in range(0, n, STAGE_SUMS_BAND)])
    return total


@kernel("mct_segment_alive")
def segment_alive_kernel(xp: Any, codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any,
                         thresholds: Any, *, stages: tuple) -> Any:
    """int32 1/0 per plan slot: slot ``i < count`` whose window ``plan[i]`` passes every stage of
    ``stages`` (``((j, (begin, end)), ...)``: stage sums ``<= thresholds[j]``); 0 past ``count``."""
    where = xp.take(offsets, plan)
    alive = xp.arange(plan.shape[0], dtype=xp.int32) < count
    for j, (b, e) in stages:
        alive = alive & (stage_sums_kernel(codes, where, position_offsets, lut, begin=b, end=e) <= thresholds[j])
    return xp.astype(alive, xp.int32)


#: Positions between the NumPy segment's checks of a band's partial stage sums (below); shorter
#: segments take the portable steps. On the bundled cascade's 253-position last stage at 1080p,
#: checks every 16 positions took a band 10 % less time than none (every 8: 7 %, 32: 8 %, 64: 1 %).
SEGMENT_CHECK_EVERY = 16


@segment_alive_kernel.override("numpy", supports="uint16 codes and int16 LUTs (windows that can no longer pass a stage are dropped early)")
def _segment_alive_numpy(codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any,
                         thresholds: Any, *, stages: tuple) -> Any:
    # Bands of plan slots on the host threads, position by position as _stage_sums_numpy (the same
    # int16 terms, exact int32 sums). Every SEGMENT_CHECK_EVERY positions a band drops the windows
    # whose partial sum exceeds the threshold minus the smallest sum the stage's remaining
    # positions can add (each position's smallest LUT entry): their stage sum exceeds the
    # threshold whatever codes follow, so they fail as in the portable version, and the windows
    # kept are decided by their full sums. Exactly the portable flags, 10 % less work on a long stage.
    from ...backends.numpy import compiled, run_bands, scratch

    codes, offsets, plan = np.asarray(codes), np.asarray(offsets), np.asarray(plan)
    position_offsets, thresholds = np.asarray(position_offsets), np.asarray(thresholds)
    rows = np.asarray(lut).reshape(-1, LUT_WIDTH)
    if codes.dtype != np.uint16 or rows.dtype != np.int16:
        return NotImplemented  # the buffers below hold the detector's dtypes
    if compiled():
        return _segment_alive_compiled(codes, offsets, plan, count, position_offsets, rows, thresholds, stages)
    if all(e - b < SEGMENT_CHECK_EVERY for _, (b, e) in stages):
        # Too short for a check: the whole-array steps (and _stage_sums_numpy) cost less than the
        # bands' bookkeeping over the millions of windows of the first stages.
        return segment_alive_kernel.portable(np, codes, offsets, plan, count, position_offsets, lut, thresholds,
                                             stages=stages)
    n = plan.shape[0]
    live = max(0, min(int(count), n))
    alive = np.zeros(n, np.int32)
    limits = _stage_limits(rows, thresholds, stages)

    def band(span: tuple[int, int]) -> None:
        a, b = span
        m = b - a
        slot = scratch("mct_seg_slot", (2, m), np.int32)  # two of each: compaction ping-pongs
        where = scratch("mct_seg_where", (2, m), np.intp)
        part = scratch("mct_seg_part", (2, m), np.int32)
        code = scratch("mct_code", (m,), np.uint16)
        term = scratch("mct_term", (m,), np.int16)
        slot[0] = np.arange(a, b, dtype=np.int32)
        where[0] = offsets[plan[a:b]]
        cur = 0
        for (j, (s0, s1)), limit in zip(stages, limits):
            if s0 == s1:  # no positions: a sum of 0
                if int(thresholds[j]) < 0:
                    return
                continue
            p = part[cur, :m]
            p.fill(0)
            for k in range(s0, s1):
                i = k - s0
                # mode="clip": no bounds check (codes and offsets come from one geometry, codes < 512)
                _add_position(codes, int(position_offsets[k]), rows[k], where[cur, :m], code[:m], term[:m], p,
                              mode="clip")
                if k + 1 == s1 or (i + 1) % SEGMENT_CHECK_EVERY == 0:
                    keep = p <= limit[i]
                    kept = int(np.count_nonzero(keep))
                    if kept < m:
                        nxt = 1 - cur
                        for buf in (slot, where, part):
                            np.compress(keep, buf[cur, :m], out=buf[nxt, :kept])
                        cur, m = nxt, kept
                        p = part[cur, :m]
                    if m == 0:
                        return
        alive[slot[cur, :m]] = 1

    run_bands(band, [(a, min(live, a + STAGE_SUMS_BAND)) for a in range(0, live, STAGE_SUMS_BAND)])
    return alive


def _stage_limits(rows: np.ndarray, thresholds: np.ndarray, stages: tuple) -> list[np.ndarray]:
    """Per stage ``(j, (b, e))``, int32 ``limit[q]``: the largest partial sum after positions
    ``b..b+q`` with which a window can still pass (the threshold minus the smallest sum the
    stage's remaining positions can add, each position's smallest LUT entry); the last is the
    threshold itself (``[threshold]`` for a stage without positions). Clipped to int32, which
    only ever drops fewer windows (``|stage sum| < 2**24``): still exact."""
    low = rows.min(axis=1).astype(np.int64)
    int32 = np.iinfo(np.int32)
    limits = []
    for j, (b, e) in stages:
        rest = np.concatenate([np.cumsum(low[b:e][::-1])[::-1][1:], [0]])
        limits.append(np.clip(int(thresholds[j]) - rest, int32.min, int32.max).astype(np.int32))
    return limits


def _segment_alive_compiled(codes: np.ndarray, offsets: np.ndarray, plan: np.ndarray, count: Any,
                            position_offsets: np.ndarray, rows: np.ndarray, thresholds: np.ndarray,
                            stages: tuple) -> np.ndarray:
    """The segment one window at a time (``_mct_numba.segment_alive``), in bands on the host threads."""
    from ...backends.numpy import run_bands
    from ._mct_numba import segment_alive

    n = plan.shape[0]
    live = max(0, min(int(count), n))
    alive = np.zeros(n, np.int32)
    limits = _stage_limits(rows, thresholds, stages)
    begin = np.array([b for _, (b, _e) in stages], np.int64)
    end = np.array([e for _, (_b, e) in stages], np.int64)
    limit_table = np.concatenate(limits)
    limit_start = np.concatenate([[0], np.cumsum([len(x) for x in limits])[:-1]]).astype(np.int64)
    where, shifts = offsets.astype(np.int64), position_offsets.astype(np.int64)
    slots = plan[:live].astype(np.int64)
    band = STAGE_SUMS_BAND // 4
    run_bands(lambda a: segment_alive(codes, where, slots[a:a + band], shifts, rows, begin, end, limit_table,
                                      limit_start, alive[a:a + band]), list(range(0, live, band)))
    return alive
