"""Training of MCT cascades: Real AdaBoost over per-position LUTs, integer thresholds, bootstrapped negatives.

Host NumPy only (float64 boosting, fixed seed, stable choices): the same inputs give the same
cascade bytes. The negatives of every stage after the first are mined with portcv's own
:class:`MCTDetector` running the integer cascade trained so far, so the windows a stage learns
to reject are exactly those the shipped cascade lets through.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ... import _validate
from .._scan._parameters import check_scale_factor
from ._cascade_file import LUT_LIMIT, LUT_WIDTH, MCTCascade
from ._mct import mct_kernel

#: LUT fixed point: ``lut = clip(rint(cost * 2**LUT_BITS), -32767, 32767)``; with cost <= 0.5 ln(2N + 1)
#: (about 6 for N = 50,000 windows) one pick stays under 2**13; repeated picks add up and are clipped.
LUT_BITS = 10
#: The thesis's stage caps on distinct positions (its last stage used 217 of the 484 allowed).
STAGE_POSITIONS = (10, 20, 40, 80, 484)


# --------------------------------------------------------------------------------------------
# Face crops: a fixed-point similarity warp (host)
# --------------------------------------------------------------------------------------------
#: Face box geometry of cv2's Haar default cascade measured on CSU ScrapShots (width 2.54 x the
#: eye distance, eye midpoint at (0.49 w, 0.38 w)): MCT boxes and cv2 boxes mean the same thing.
BOX_PER_EYE_DISTANCE = 2.54
EYE_MID = (0.49, 0.38)


def warp_crop(image: np.ndarray, eyes: Any, size: int, *, rotation: float = 0.0, scale: float = 1.0,
              shift: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """A ``size x size`` uint8 crop of a gray face with the eyes at the cv2-like box geometry.

    ``eyes = (lx, ly, rx, ry)`` in source pixels; ``rotation`` (degrees), ``scale`` and
    ``shift`` (crop pixels) perturb the similarity for augmentation. The map from crop pixel
    centres to source coordinates is quantized to Q16 integers once (its cos/sin are the only
    float functions), then every sample is integer: Q8 bilinear weights, ``(sum + 2**15) >> 16``,
    source indices clamped to the image (replicate). Deterministic on every platform.
    """
    lx, ly, rx, ry = (float(v) for v in eyes)
    dist = math.hypot(rx - lx, ry - ly)
    angle = math.atan2(ry - ly, rx - lx) + math.radians(rotation)
    box = BOX_PER_EYE_DISTANCE * dist / scale  # source pixels per crop width
    k = box / size  # source pixels per crop pixel
    c, s = k * math.cos(angle), k * math.sin(angle)
    mx, my = (lx + rx) / 2, (ly + ry) / 2
    u0, v0 = EYE_MID[0] * size + shift[0], EYE_MID[1] * size + shift[1]
    # src = [c -s; s c] (dst + 0.5 - (u0, v0)) + (mx, my) - 0.5, in Q16
    q = 1 << 16
    a = [int(round(v * q)) for v in (c, -s, s, c)]
    tx = int(round((mx - 0.5 + c * (0.5 - u0) - s * (0.5 - v0)) * q))
    ty = int(round((my - 0.5 + s * (0.5 - u0) + c * (0.5 - v0)) * q))
    v, u = np.mgrid[0:size, 0:size].astype(np.int64)
    sx = a[0] * u + a[1] * v + tx  # Q16 source coordinates
    sy = a[2] * u + a[3] * v + ty
    x0, y0 = sx >> 16, sy >> 16
    wx, wy = (sx >> 8) & 255, (sy >> 8) & 255  # Q8 fractions
    h, w = image.shape
    img = image.astype(np.int64)

    def at(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        return img[np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]

    top = (256 - wx) * at(y0, x0) + wx * at(y0, x0 + 1)
    bottom = (256 - wx) * at(y0 + 1, x0) + wx * at(y0 + 1, x0 + 1)
    return (((256 - wy) * top + wy * bottom + (1 << 15)) >> 16).astype(np.uint8)


def _gamma_table(gamma: float) -> np.ndarray:
    x = np.arange(256, dtype=np.float64) / 255.0
    return np.clip(np.rint(255.0 * x**gamma), 0, 255).astype(np.uint8)


def _blur121(img: np.ndarray) -> np.ndarray:
    """``[1 2 1] / 4`` both ways (about sigma 0.7), integer, edges replicated."""
    x = np.pad(img.astype(np.int32), 1, mode="edge")
    x = (x[:, :-2] + 2 * x[:, 1:-1] + x[:, 2:] + 2) >> 2
    return ((x[:-2] + 2 * x[1:-1] + x[2:] + 2) >> 2).astype(np.uint8)


def augmented_faces(images: list, eyes: np.ndarray, *, size: int = 24, per_face: int = 30, seed: int = 0,
                    light: bool = False) -> np.ndarray:
    """``(len(images) * per_face, size, size)`` uint8 aligned, augmented face crops.

    Each crop draws (seeded) a mirror, a rotation in {-12, -8, ..., 12} degrees, a scale in
    {0.92, 1, 1.08}, a shift of -1..1 px per axis, a gamma in {0.7, 1, 1.4} and a blur in {none,
    [1 2 1]}; the first crop of every face is the plain one. ``light``: rotations +-4, no blur or
    gamma (validation).
    """
    rng = np.random.default_rng(seed)
    rotations = (-4, 0, 4) if light else (-12, -8, -4, 0, 4, 8, 12)
    out = np.empty((len(images) * per_face, size, size), np.uint8)
    tables = {g: _gamma_table(g) for g in (0.7, 1.4)}
    i = 0
    for img, e in zip(images, eyes):
        for k in range(per_face):
            if k == 0:
                rot, sc, sh, mirror, gamma, blur = 0, 1.0, (0.0, 0.0), False, 1.0, False
            else:
                rot = float(rotations[rng.integers(len(rotations))])
                sc = float((0.92, 1.0, 1.08)[rng.integers(3)])
                sh = (float(rng.integers(-1, 2)), float(rng.integers(-1, 2)))
                mirror = bool(rng.integers(2))
                gamma = 1.0 if light else float((0.7, 1.0, 1.4)[rng.integers(3)])
                blur = False if light else bool(rng.integers(2))
            crop = warp_crop(img, e, size, rotation=rot, scale=sc, shift=sh)
            if mirror:
                crop = crop[:, ::-1]
            if gamma != 1.0:
                crop = tables[gamma][crop]
            if blur:
                crop = _blur121(crop)
            out[i] = crop
            i += 1
    return out


# --------------------------------------------------------------------------------------------
# Negative windows from images (through the detector's own scan)
# --------------------------------------------------------------------------------------------
def _window_codes(windows: np.ndarray) -> np.ndarray:
    """``(N, (h-2)*(w-2))`` int32 MCT codes of ``(N, h, w)`` uint8 windows (NumPy)."""
    import portcv

    with portcv.using("numpy"):
        codes = np.asarray(mct_kernel(np.asarray(windows)))
    return codes.reshape(codes.shape[0], -1).astype(np.int32)


def _mine(detector: Any, images: list, want: int, rng: np.random.Generator, window: tuple[int, int],
          scale_factor: float, step: int) -> tuple[np.ndarray, int]:
    """Up to ``want`` 24x24 windows of ``images`` that pass ``detector``'s cascade (``None``: every
    window), drawn without replacement from a per-image quota; and how many passed in all."""
    import portcv

    from ..._resize_plans import pyramid_plan

    quota = max(1, -(-2 * want // max(len(images), 1)))
    picked: list[np.ndarray] = []
    total = 0
    W, H = window
    for img in images:
        h, w = img.shape
        levels = pyramid_plan(w, h, scale_factor, window, min_size=window, max_size=(w, h))
        with portcv.using("numpy"):
            if detector is None:  # every window of every level, in (level, y, x) order
                rows = []
                for li, (_, (lw, lh)) in enumerate(levels):
                    yy, xx = np.mgrid[0 : lh - H + 1 : step, 0 : lw - W + 1 : step]
                    rows.append(np.stack([np.full(yy.size, li), xx.reshape(-1), yy.reshape(-1)], axis=1))
                found = np.concatenate(rows) if rows else np.zeros((0, 3), np.int64)
            else:
                found = detector.candidates(img, scale_factor=scale_factor, min_size=window, step=step)
            total += found.shape[0]
            if found.shape[0] == 0:
                continue
            if found.shape[0] > quota:
                found = found[np.sort(rng.choice(found.shape[0], quota, replace=False))]
            for lv in np.unique(found[:, 0]):
                sel = found[found[:, 0] == lv]
                size = levels[int(lv)][1]
                level = np.asarray(portcv.transform.resize(img, size=size, interpolation="bilinear_exact"))
                yy = sel[:, 2][:, None, None] + np.arange(H)[None, :, None]
                xx = sel[:, 1][:, None, None] + np.arange(W)[None, None, :]
                picked.append(level[yy, xx])
    if not picked:
        return np.zeros((0, H, W), np.uint8), total
    pool = np.concatenate(picked)
    if pool.shape[0] > want:
        pool = pool[np.sort(rng.choice(pool.shape[0], want, replace=False))]
    return pool, total


# --------------------------------------------------------------------------------------------
# Real AdaBoost with one LUT per position
# --------------------------------------------------------------------------------------------
def _quantize(cost: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(cost * (1 << LUT_BITS)), -LUT_LIMIT, LUT_LIMIT).astype(np.int16)


def _integer_sums(codes: np.ndarray, positions: list[int], luts: list[np.ndarray]) -> np.ndarray:
    total = np.zeros(codes.shape[0], np.int32)
    for p, lut in zip(positions, luts):
        total += lut[codes[:, p]].astype(np.int32)
    return total


def _threshold(sums: np.ndarray, hit_rate: float) -> int:
    """The smallest integer T with ``share(sums <= T) >= hit_rate``."""
    s = np.sort(sums)
    keep = min(s.size, max(1, math.ceil(hit_rate * s.size)))
    return int(s[keep - 1])


def _train_stage(pos: np.ndarray, neg: np.ndarray, val: np.ndarray, cap: int, max_rounds: int, hit_rate: float,
                 target_fp: float, n_positions: int) -> tuple:
    """One stage: ``(positions, int16 LUTs, threshold, rounds, negative pass rate)``."""
    codes = np.concatenate([pos, neg])
    n = codes.shape[0]
    y = np.concatenate([np.ones(pos.shape[0]), -np.ones(neg.shape[0])])
    w = np.where(y > 0, 0.5 / pos.shape[0], 0.5 / neg.shape[0])
    flat = codes + (np.arange(n_positions, dtype=np.int32) * LUT_WIDTH)[None, :]
    flat_pos, flat_neg = flat[: pos.shape[0]].reshape(-1), flat[pos.shape[0] :].reshape(-1)
    eps = 1.0 / (2 * n)
    chosen: dict[int, np.ndarray] = {}  # position -> float cost table, in first-pick order
    quantized: dict[int, np.ndarray] = {}
    val_sums = np.zeros(val.shape[0], np.int32)  # integer stage sums, updated per picked position
    neg_sums = np.zeros(neg.shape[0], np.int32)
    thr, fp, rounds = 0, 1.0, 0
    for rounds in range(1, max_rounds + 1):
        wp = np.bincount(flat_pos, weights=np.repeat(w[: pos.shape[0]], n_positions),
                         minlength=n_positions * LUT_WIDTH).reshape(n_positions, LUT_WIDTH)
        wn = np.bincount(flat_neg, weights=np.repeat(w[pos.shape[0] :], n_positions),
                         minlength=n_positions * LUT_WIDTH).reshape(n_positions, LUT_WIDTH)
        z = 2.0 * np.sqrt(wp * wn).sum(axis=1)
        if len(chosen) >= cap:
            allowed = np.full(n_positions, False)
            allowed[list(chosen)] = True
            z = np.where(allowed, z, np.inf)
        p = int(np.argmin(z))  # ties: the lowest raster index
        cost = -0.5 * np.log((wp[p] + eps) / (wn[p] + eps))
        cost[LUT_WIDTH - 1] = 0.0
        chosen[p] = chosen.get(p, np.zeros(LUT_WIDTH)) + cost
        w = w * np.exp(y * cost[codes[:, p]])
        w /= w.sum()
        # Quantize first, then tune the threshold on the integer sums of the validation faces.
        old = quantized.get(p)
        new = quantized[p] = _quantize(chosen[p])
        for sums, c in ((val_sums, val), (neg_sums, neg)):
            if old is not None:
                sums -= old[c[:, p]].astype(np.int32)
            sums += new[c[:, p]].astype(np.int32)
        thr = _threshold(val_sums, hit_rate)
        fp = float(np.mean(neg_sums <= thr))
        if fp <= target_fp:
            break
    keys = list(chosen)
    luts = [_quantize(chosen[k]) for k in keys]
    return keys, luts, thr, rounds, fp


def train_mct_cascade(positives: Any, negative_images: Any, *, window: tuple[int, int] = (24, 24),
                      stage_positions: tuple[int, ...] = STAGE_POSITIONS, negatives_per_stage: int = 40000,
                      stage_hit_rate: float = 0.995, stage_false_positive: float = 0.5,
                      max_rounds: Any = 600, validation: Any = None, scale_factor: float = 1.15, step: int = 2,
                      seed: int = 0, progress: bool = False, meta: Any = None) -> MCTCascade:
    """Train an MCT cascade: Real AdaBoost with one cost LUT per window position, stage by stage.

    Parameters
    ----------
    positives : (N, H, W) uint8 array
        Aligned face windows (``window`` sized), augmented as wanted.
    negative_images : list of (h, w) uint8 arrays
        Face-free gray images; their windows at every scale are the negatives.
    window : (int, int)
        Window ``(width, height)``; positions are the ``(W-2) x (H-2)`` 3x3 centres.
    stage_positions : tuple of int
        Most distinct positions per stage (its length is the number of stages); the thesis's
        ``(10, 20, 40, 80, 484)``.
    negatives_per_stage : int
        Negative windows per stage: random windows of the images for the first stage, then
        windows that pass the integer cascade trained so far (mined with :class:`MCTDetector`
        on NumPy). When fewer pass, all of them are used; none left ends the training early.
    stage_hit_rate : float or tuple of float
        Share of validation faces each stage's threshold keeps (on the quantized integer sums);
        one per stage or one for all.
    stage_false_positive : float
        A stage (but the last) stops once its training negatives pass at most this share.
    max_rounds : int or tuple of int
        Boosting rounds per stage (the last stage runs them all unless its negatives are gone).
    validation : (M, H, W) uint8 array, optional
        Faces for threshold tuning only (never boosted). None: every 8th positive is held out.
    scale_factor, step : float, int
        The pyramid and window step of the negative mining scans.
    seed : int
        Seeds the negative draws (the boosting itself is deterministic).
    progress : bool
        Show a progress bar over stages (tqdm when installed) and a line per stage.
    meta : dict, optional
        Extra provenance merged into the cascade's ``meta``.

    Returns
    -------
    MCTCascade
        ``meta['stages']`` records per stage its positions, rounds, negatives, how many windows
        passed the earlier stages, the negatives' pass rate and the validation faces kept; no
        timings, so the same inputs give the same bytes.

    Notes
    -----
    Real AdaBoost with domain-partitioning weak learners (Schapire and Singer): a position's
    weak hypothesis is a table over its 511 MCT codes, ``c[g] = -0.5 ln((W+[g] + e) / (W-[g] + e))``
    (``e = 1 / 2N``; low cost = face, as thesis eq. 2.3), the position with the smallest
    ``Z = 2 sum_g sqrt(W+[g] W-[g])`` is picked each round (among the stage's positions once its
    cap is reached; a repeated pick adds to that position's table), and the weights become
    ``w exp(y c[g])``. After every round the tables are quantized to int16
    (``rint(c * 2**10)``, clipped to +-32767) and the threshold is tuned on the *integer* sums of
    the validation faces, so the cascade that is shipped is the one whose rates were measured.
    Froeba and Ernst's boosting details are not in Tek's thesis; this recipe is portcv's.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> faces, nonfaces = portcv.data.lfw_subset()
    >>> faces24 = np.asarray(portcv.transform.resize(faces, size=(24, 24), interpolation="bilinear_exact"))
    >>> c = portcv.detect.train_mct_cascade(faces24, list(portcv.data.skimage_negatives()[:3]),
    ...                                     stage_positions=(4, 8), negatives_per_stage=500, max_rounds=8)
    >>> c.n_stages, c.window
    (2, (24, 24))
    """
    from ._detector import MCTDetector

    if not (isinstance(window, (tuple, list)) and len(window) == 2):
        raise ValueError(f"window must be a (width, height) pair, got {window!r}")
    W = _validate.integer(window[0], "window", low=3, high=256)
    H = _validate.integer(window[1], "window", low=3, high=256)
    if not isinstance(positives, np.ndarray):  # lists (ragged ones too) are refused by name
        raise TypeError(f"positives must be a (N, {H}, {W}) uint8 NumPy array, got {type(positives).__name__}")
    pos = positives
    if pos.shape[1:] != (H, W):
        _validate.gray(pos, "positives", "auto", batches=False)  # colour faces: the conversion hint
    if not isinstance(positives, np.ndarray) or pos.dtype != np.uint8 or pos.ndim != 3 or pos.shape[1:] != (H, W):
        raise ValueError(f"positives must be a (N, {H}, {W}) uint8 NumPy array, got "
                         f"{getattr(positives, 'shape', None)} {getattr(positives, 'dtype', type(positives).__name__)}")
    if pos.shape[0] < 2:
        raise ValueError(f"positives must hold at least 2 faces, got {pos.shape[0]}")
    if isinstance(negative_images, np.ndarray) or not hasattr(negative_images, "__iter__"):
        raise TypeError("negative_images must be a list of (h, w) uint8 NumPy arrays")
    negs = list(negative_images)
    if not negs:
        raise ValueError("negative_images must not be empty")
    for i, img in enumerate(negs):
        if isinstance(img, np.ndarray):
            _validate.gray(img, f"negative_images[{i}]", "auto", batches=False)
        if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 2 or min(img.shape) < max(W, H):
            raise ValueError(f"negative_images[{i}] must be a gray (h, w) uint8 NumPy array at least the window's "
                             f"size, got {getattr(img, 'shape', None)} {getattr(img, 'dtype', None)}")
    if not (isinstance(stage_positions, (tuple, list)) and stage_positions):
        raise ValueError(f"stage_positions must be a non-empty tuple of ints, got {stage_positions!r}")
    caps = [_validate.integer(c, "stage_positions", low=1, high=(W - 2) * (H - 2)) for c in stage_positions]
    S = len(caps)
    rounds_per = tuple(max_rounds) if isinstance(max_rounds, (tuple, list)) else (max_rounds,) * S
    if len(rounds_per) != S:
        raise ValueError(f"max_rounds must be an int or {S} ints, got {max_rounds!r}")
    rounds_per = tuple(_validate.integer(r, "max_rounds", low=1, high=100000) for r in rounds_per)
    n_neg = _validate.integer(negatives_per_stage, "negatives_per_stage", low=1, high=10**7)
    hit_per = tuple(stage_hit_rate) if isinstance(stage_hit_rate, (tuple, list)) else (stage_hit_rate,) * S
    if len(hit_per) != S:
        raise ValueError(f"stage_hit_rate must be a float or {S} floats, got {stage_hit_rate!r}")
    hit_per = tuple(_validate.real(h, "stage_hit_rate", positive=True, high=1.0) for h in hit_per)
    target_fp = _validate.real(stage_false_positive, "stage_false_positive", positive=True, high=1.0)
    sf = check_scale_factor(scale_factor)
    stp = _validate.integer(step, "step", low=1, high=64)
    sd = _validate.integer(seed, "seed", low=0, high=2**63 - 1)
    if validation is None:
        held = np.arange(pos.shape[0]) % 8 == 7
        val_img, pos = pos[held], pos[~held]
    else:
        val_img = np.asarray(validation)
        if val_img.dtype != np.uint8 or val_img.ndim != 3 or val_img.shape[1:] != (H, W) or val_img.shape[0] == 0:
            raise ValueError(f"validation must be a (M, {H}, {W}) uint8 array, got {val_img.shape} {val_img.dtype}")
    rng = np.random.default_rng(sd)
    n_positions = (W - 2) * (H - 2)
    pos_codes, val_codes = _window_codes(pos), _window_codes(val_img)

    positions: list[np.ndarray] = []
    luts: list[np.ndarray] = []
    ends: list[int] = []
    thresholds: list[int] = []
    records = []
    bar = _progress(S, progress)
    cascade = None
    for j in range(S):
        t_stage = time.perf_counter()
        detector = None if cascade is None else MCTDetector(cascade)
        neg_windows, passing = _mine(detector, negs, n_neg, rng, (W, H), sf, stp)
        if neg_windows.shape[0] == 0:
            if progress:
                print(f"stage {j}: no negative window passes the cascade so far; stopping")
            break
        neg_codes = _window_codes(neg_windows)
        # Validation faces that reach this stage (the earlier thresholds already dropped some).
        keys, stage_luts, thr, rounds, fp = _train_stage(pos_codes, neg_codes, val_codes, caps[j], rounds_per[j],
                                                         hit_per[j],
                                                         target_fp if j < S - 1 else -1.0, n_positions)
        val_sums = _integer_sums(val_codes, keys, stage_luts)
        val_codes = val_codes[val_sums <= thr]
        pos_codes = pos_codes[_integer_sums(pos_codes, keys, stage_luts) <= thr]
        for k, lut in zip(keys, stage_luts):
            positions.append(np.array([k % (W - 2) + 1, k // (W - 2) + 1], np.int16))
            row = np.zeros(LUT_WIDTH, np.int16)
            row[:] = lut
            luts.append(row)
        ends.append(len(positions))
        thresholds.append(thr)
        cascade = MCTCascade(np.stack(positions), np.stack(luts), np.array(ends, np.int32),
                             np.array(thresholds, np.int32), (W, H), {})
        records.append(dict(positions=len(keys), rounds=rounds, negatives=int(neg_windows.shape[0]),
                            negatives_passing_before=int(passing), negative_pass_rate=round(fp, 6),
                            validation_kept=int(val_codes.shape[0])))
        if progress:
            bar.update(1)
            print(f"stage {j}: {len(keys)} positions, {rounds} rounds, {neg_windows.shape[0]} negatives "
                  f"({passing} passing before), pass rate {fp:.4f}, validation kept {val_codes.shape[0]}, "
                  f"{time.perf_counter() - t_stage:.1f} s")
        if pos_codes.shape[0] < 2 or val_codes.shape[0] == 0:
            break
    bar.close()
    if cascade is None:
        raise ValueError("no negative window found in negative_images: nothing to train against")
    info = dict(meta or {})
    info.update(
        recipe=dict(method="real-adaboost-lut", lut_bits=LUT_BITS, stage_positions=list(caps),
                    negatives_per_stage=n_neg, stage_hit_rate=list(hit_per), stage_false_positive=target_fp,
                    max_rounds=list(rounds_per), scale_factor=sf, step=stp, positives=int(positives.shape[0]),
                    validation=int(val_img.shape[0]), negative_images=len(negs)),
        seed=sd, stages=records)
    return MCTCascade(cascade.positions, cascade.lut, cascade.stage_end, cascade.threshold, (W, H), info)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, on: bool) -> Any:
    if not on:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc="MCT stages", unit="stage")
