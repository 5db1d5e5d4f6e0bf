"""Which portcv operations can run tile by tile, and the halo each one needs.

A tile is computed on its core grown by the halo (clipped to the image), and only the core is
kept. For that to equal one call on the whole image bit for bit, the halo must cover every pixel
whose value can change when the image ends at the tile's edge instead of the true edge. Per stage
of a chain that is the stage's read radius ``r`` (how far its output looks at its input) and its
positional depth ``d`` (how close to an edge an output pixel must be for the edge's *position*
to matter beyond its reads: ``edges.detect`` never accepts a pixel within ``alpha + 1`` of the
edge, ``motion.difference(variant='listing')`` never sets the outer 7 rows). Per side and axis::

    W_0 = 0,   W_i = max(W_{i-1} + r_i, d_i),   halo = W_last

Everything here is pure Python on parameters: importing it imports no dask.
"""

from __future__ import annotations

import importlib
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..backends import using

#: ``((before, after) rows, (before, after) columns)``: the halo of an op or chain, in pixels.
Halo = tuple[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class Tileable:
    """An op that runs tile by tile: how far it reads and where the edge's position matters."""

    #: ``params -> (read, positional)``, each ``((before, after) rows, (before, after) columns)``.
    reach: Callable[[dict], tuple[Halo, Halo]]
    #: How many image arguments it takes (``edges.magnitude(gx, gy)``: 2).
    inputs: int = 1
    #: How it reads its channel layout: ``"channel_axis"`` (takes ``channel_axis='auto'|None|-1``),
    #: ``"gray"`` (gray frames only, ``channel_axis='auto'|None``), ``"rgb"`` (channels last, no
    #: parameter), ``"planes"`` (no channel parameter: ``(..., H, W)`` planes).
    layout: str = "channel_axis"
    #: The output's channel layout: ``"same"``, ``"gray"`` or ``"rgb"``.
    out: str = "same"
    #: The dtype of the image(s) the op takes (the parameter check runs it on a 1 x 1 image of it).
    dtype: str = "uint8"
    #: ``params -> None``: refuses parameters the op accepts but a tile cannot (before the op's own check).
    tiling: Callable[[dict], None] | None = None


def _sym(ry: int, rx: int | None = None) -> Halo:
    rx = ry if rx is None else rx
    return (ry, ry), (rx, rx)


def _anchored(ky: int, kx: int) -> Halo:
    """A ``ky x kx`` window anchored at ``(ky // 2, kx // 2)`` (OpenCV's anchor, even sizes too)."""
    return (ky // 2, ky - 1 - ky // 2), (kx // 2, kx - 1 - kx // 2)


_ZERO = _sym(0)


def _point(params: dict) -> tuple[Halo, Halo]:
    return _ZERO, _ZERO


def _size_pair(value: Any) -> tuple[int, int]:
    """``ksize`` as ``(width, height)``: an int or a pair, as the filters take it."""
    if isinstance(value, (tuple, list)):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _gaussian_size(k: int, sigma: float, rule: str) -> int:
    if k > 0:
        return k
    if rule == "report":  # the report's "6 sigma - 1", made odd: 2 ceil(3 sigma) - 1
        return 2 * math.ceil(3 * sigma) - 1
    return int(round(sigma * 6 + 1)) | 1  # OpenCV's ksize = 0 rule for 8-bit images


def _gaussian(params: dict) -> tuple[Halo, Halo]:
    sigma = float(params.get("sigma", 0) or 0)
    sigma_y = params.get("sigma_y")
    sigma_y = sigma if sigma_y is None or float(sigma_y) == 0 else float(sigma_y)
    rule = params.get("rule", "opencv")
    kw, kh = _size_pair(params.get("ksize", 0))
    return _anchored(_gaussian_size(kh, sigma_y, rule), _gaussian_size(kw, sigma, rule)), _ZERO


def _box(params: dict) -> tuple[Halo, Halo]:
    kw, kh = _size_pair(params["ksize"])
    return _anchored(kh, kw), _ZERO


def _sep(params: dict) -> tuple[Halo, Halo]:
    return _anchored(len(params["ky"]), len(params["kx"])), _ZERO


def _conv2d(params: dict) -> tuple[Halo, Halo]:
    kernel = params["kernel"]
    rows = len(kernel)
    cols = len(kernel[0]) if rows else 0
    return _anchored(rows, cols), _ZERO


def _sobel_radius(ksize: int) -> int:
    # Scharr (ksize=-1) and ksize=1 (a 3-tap derivative) both read one pixel each way.
    return 1 if ksize in (-1, 1) else ksize // 2


def _sobel(params: dict) -> tuple[Halo, Halo]:
    return _sym(_sobel_radius(int(params.get("ksize", 3)))), _ZERO


def _median(params: dict) -> tuple[Halo, Halo]:
    return _sym(int(params["ksize"]) // 2), _ZERO


def _detect(params: dict) -> tuple[Halo, Halo]:
    alpha = int(params.get("alpha", 2))
    ksize = int(params.get("ksize", 3))
    sigma = params.get("sigma")
    blur = _gaussian_size(ksize, float(sigma), "opencv") if sigma is not None else ksize
    # Low-pass, Sobel (1), local maximum along the sector (1), then the apron gather (alpha).
    read = blur // 2 + 2 + alpha
    # Pixels within `margin` of an edge are never accepted; the apron carries that alpha further.
    margin = alpha + 1 if params.get("variant", "pseudocode") == "pseudocode" else 2
    return _sym(read), _sym(margin + alpha)


def _difference(params: dict) -> tuple[Halo, Halo]:
    beta = int(params.get("beta", 12))
    if params.get("variant", "pseudocode") == "listing":
        # Listing 6 sets only rows/columns in (7, n - 7) and its apron never matches row or
        # column 0, so the first beta + 1 rows see where the image starts.
        positional = ((max(beta + 1, 8), max(beta, 7)),) * 2
        return _sym(beta), positional  # type: ignore[return-value]
    return _sym(beta), _ZERO


def _fixed_threshold(params: dict) -> None:
    threshold = params.get("threshold")
    if hasattr(threshold, "shape") and not isinstance(threshold, numbers.Integral):
        raise ValueError("color.binarize runs tile by tile only with a fixed integer threshold; a per-frame "
                         f"threshold array is global to its frame (got {type(threshold).__name__})")


#: Every op that runs tile by tile, by qualified name.
TILEABLE: dict[str, Tileable] = {
    "filters.sep_filter": Tileable(_sep),
    "filters.gaussian_blur": Tileable(_gaussian),
    "filters.box_blur": Tileable(_box),
    "filters.mean_filter": Tileable(_box),
    "filters.convolve2d": Tileable(_conv2d),
    "filters.sobel": Tileable(_sobel),
    "filters.gradients": Tileable(_sobel),
    "filters.median_filter": Tileable(_median),
    "edges.gradient": Tileable(_sobel, layout="gray"),
    "edges.magnitude": Tileable(_point, inputs=2, layout="planes", dtype="int16"),
    "edges.direction_sector": Tileable(_point, inputs=2, layout="planes", dtype="int16"),
    "edges.detect": Tileable(_detect, layout="gray"),
    "color.rgb_to_gray": Tileable(_point, layout="rgb", out="gray"),
    "color.gray_to_rgb": Tileable(_point, out="rgb"),
    "color.rgb_to_bgr": Tileable(_point, layout="rgb"),
    "color.bgr_to_rgb": Tileable(_point, layout="rgb"),
    "color.binarize": Tileable(_point, tiling=_fixed_threshold),
    "motion.difference": Tileable(_difference, inputs=2, layout="planes"),
}

#: Ops that cannot be tiled with a halo (yet), and why.
GLOBAL_OPS: dict[str, str] = {
    "color.histogram": "a reduction over the whole image",
    "color.threshold_otsu": "its threshold comes from the whole image's histogram",
    "color.threshold_two_peaks": "it takes a histogram, not an image",
    "color.binarize_auto": "its threshold comes from the whole image's histogram",
    "edges.canny": "hysteresis follows edge chains of unbounded length",
    "motion.density": "its cells are a grid over the whole image (H // rows)",
    "motion.regions": "its cells are a grid over the whole image",
    "motion.area_image": "it takes the motion cells of the whole image's grid",
    "motion.draw_regions": "it takes the motion cells of the whole image's grid",
    "motion.detect_motion": "its cells are a grid over the whole image",
    "transform.integral": "a prefix sum over the whole image",
    "transform.resize": "its coordinate tables follow from the whole image's size",
    "transform.pyramid": "resizes the whole image",
    "transform.pack_pyramid": "packs whole pyramid levels",
    "transform.zoom": "its coordinate tables follow from the whole image's size",
    "transform.spline_filter": "a recursive (infinite impulse response) filter: every pixel reads the whole row",
    "detect.detect_video": "multi-scale windows grouped over the whole frame",
    "color.nv12_to_rgb": "a decoder's frame: the chroma rows follow the luma rows of the whole frame",
    "color.nv12_to_bgr": "a decoder's frame: the chroma rows follow the luma rows of the whole frame",
    "color.i420_to_rgb": "a decoder's frame: the chroma planes follow the luma rows of the whole frame",
    "color.i420_to_bgr": "a decoder's frame: the chroma planes follow the luma rows of the whole frame",
    "detect.mct": "its default border='valid' returns a smaller image; not tiled yet (its halo would be 1)",
    "filters.joint_bilateral": "not tiled yet: it takes a guide and a source image, and the tile engine splits "
                               "one image (its halo would be d // 2)",
}

#: Public callables of the image domains that are not image operations (helpers, classes).
NOT_IMAGE_OPS = {
    "filters.gaussian_kernel", "filters.gaussian_taps_q8", "motion.cell_bounds", "motion.MotionDetector",
    "motion.MotionResult", "detect.CascadeDetector", "detect.Cascade", "detect.load_cascade",
    "detect.group_rectangles", "detect.VideoDetections", "detect.MCTDetector", "detect.MCTCascade",
    "detect.load_mct_cascade", "detect.save_mct_cascade", "detect.train_mct_cascade",
}


@dataclass(frozen=True)
class Stage:
    """One resolved step of a chain."""

    name: str
    fn: Callable
    params: dict
    spec: Tileable


def _qualified(op: Any) -> str:
    """``'edges.detect'`` for ``'edges.detect'``, ``'detect'`` (if unique) or the function itself."""
    if callable(op) and not isinstance(op, str):
        for name in [*TILEABLE, *GLOBAL_OPS]:
            domain, attr = name.split(".")
            module = importlib.import_module(f"portcv.{domain}")
            if getattr(module, attr, None) is op:
                return name
        raise ValueError(f"{getattr(op, '__name__', op)!r} is not a portcv operation that runs tile by tile; "
                         f"see portcv.distributed.TILEABLE")
    if not isinstance(op, str):
        raise TypeError(f"op must be a name like 'filters.gaussian_blur' or a portcv function, got {type(op).__name__}")
    if "." in op:
        return op
    matches = [name for name in [*TILEABLE, *GLOBAL_OPS] if name.split(".")[1] == op]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"op {op!r} is ambiguous: say which of {', '.join(matches)}")
    raise ValueError(f"unknown op {op!r}; tileable ops: {', '.join(sorted(TILEABLE))}")


def resolve_stage(op: Any, params: dict) -> Stage:
    """The registry entry, the function and the parameters of one step; global ops refused."""
    name = _qualified(op)
    if name in GLOBAL_OPS:
        raise ValueError(f"{name} is global ({GLOBAL_OPS[name]}), so it cannot run tile by tile with a halo; "
                         "see portcv.distributed.GLOBAL_OPS")
    if name not in TILEABLE:
        raise ValueError(f"unknown op {name!r}; tileable ops: {', '.join(sorted(TILEABLE))}")
    domain, attr = name.split(".")
    fn = getattr(importlib.import_module(f"portcv.{domain}"), attr)
    return Stage(name, fn, dict(params), TILEABLE[name])


def check_params(stage: Stage) -> None:
    """Refuse bad parameters with the op's own errors: the op runs once on a 1 x 1 zero image.

    The op's validators are the one source of truth (``ksize`` odd and in range, ``sigma`` finite
    and >= 0, unknown keywords, ...); on a 1 x 1 image the call costs well under a millisecond and
    never compiles (NumPy).
    """
    name, fn, spec, params = stage.name, stage.fn, stage.spec, stage.params
    if spec.tiling is not None:
        spec.tiling(params)
    axis = params.get("channel_axis")
    channels_last = isinstance(axis, int) and not isinstance(axis, bool)
    rgb = spec.layout == "rgb" or (spec.layout == "channel_axis" and channels_last)
    probe = np.zeros((1, 1, 3) if rgb else (1, 1), spec.dtype)
    try:
        with using("numpy"):
            fn(*[probe] * spec.inputs, **params)
    except TypeError as exc:
        if "argument" in str(exc) and f"{fn.__name__}()" in str(exc):  # Python's own: unknown or missing keyword
            raise TypeError(f"{name}: {exc}") from None
        raise


def resolve_chain(op_or_chain: Any, params: dict | None = None) -> list[Stage]:
    """A chain as a list of stages: an op with ``params``, or a list of ``op`` / ``(op, params)``."""
    params = dict(params or {})
    if isinstance(op_or_chain, (list, tuple)):
        if params:
            raise TypeError("keyword parameters apply to a single op; give a chain's as (op, params) pairs")
        if not op_or_chain:
            raise ValueError("the chain is empty")
        stages = []
        for item in op_or_chain:
            if isinstance(item, (list, tuple)):
                if len(item) != 2 or not isinstance(item[1], dict):
                    raise ValueError(f"a chain step must be an op or an (op, params dict) pair, got {item!r}")
                stages.append(resolve_stage(item[0], item[1]))
            else:
                stages.append(resolve_stage(item, {}))
    else:
        stages = [resolve_stage(op_or_chain, params)]
    for stage in stages:
        check_params(stage)
    return stages


def chain_halo(stages: list[Stage]) -> Halo:
    """The effect depth of the chain, per side and axis (the recursion in this module's docstring)."""
    wide = [[0, 0], [0, 0]]
    for stage in stages:
        read, positional = stage.spec.reach(stage.params)
        for axis in range(2):
            for side in range(2):
                wide[axis][side] = max(wide[axis][side] + read[axis][side], positional[axis][side])
    return (wide[0][0], wide[0][1]), (wide[1][0], wide[1][1])


def halo(op: Any, **params: Any) -> Halo:
    """The halo an op (or a chain) needs to run tile by tile bit-exactly, per side and axis.

    Parameters
    ----------
    op : str, function or list
        A tileable op (``'filters.gaussian_blur'``, ``'gaussian_blur'`` or
        ``portcv.filters.gaussian_blur``), or a chain: a list of ops and ``(op, params)`` pairs.
    **params
        The op's parameters (as it takes them; the halo follows from kernel sizes, ``sigma``,
        ``alpha``, ``beta``, ``variant``). They are checked by the op's own validators (the op
        runs once on a 1 x 1 image), so a bad one raises what the op itself would.

    Returns
    -------
    ((int, int), (int, int))
        ``(before, after)`` pixels for rows, then for columns.

    Raises
    ------
    ValueError
        The op is global (:data:`GLOBAL_OPS`) or unknown; a parameter out of range (an even
        ``ksize``, a NaN or negative ``sigma``, ...).
    TypeError
        A parameter of the wrong type, an unknown or a missing keyword.

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> pdist.halo("filters.gaussian_blur", ksize=7, sigma=1.5)
    ((3, 3), (3, 3))
    >>> pdist.halo("edges.detect", t_low=70, t_high=80, alpha=2)
    ((5, 5), (5, 5))
    >>> pdist.halo([("gaussian_blur", dict(ksize=5, sigma=1)), ("edges.detect", dict(t_low=70, t_high=80))])
    ((7, 7), (7, 7))
    """
    return chain_halo(resolve_chain(op, params))
