"""The motion detector: gray, edges, difference and cell density as one chain per frame pair."""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import _validate, backends
from ..backends import backend
from ._steps import (
    DEFAULT_BETA,
    DEFAULT_GAMMA,
    DEFAULT_GRID,
    _grid,
    _variant,
    density,
    difference,
    regions,
)


# --------------------------------------------------------------------------------------------
# The pipeline: frames -> edges -> D -> D' -> regions
# --------------------------------------------------------------------------------------------
class MotionResult(NamedTuple):
    """Motion between consecutive frames (leading axes: one entry per frame pair)."""

    #: (..., rows, cols) bool: cells with motion.
    regions: Any
    #: (..., rows, cols) int32: difference pixels per cell (:func:`density`).
    density: Any
    #: (..., H, W) uint8 0/255: the thresholded difference matrix (:func:`difference`).
    difference: Any
    #: (..., H, W) uint8 0/255: the edges of the later frame of each pair.
    edges: Any


def _gray(frames: Any, rgb: bool) -> Any:
    from .. import color

    return color.rgb_to_gray(frames) if rgb else frames


def _edges(gray: Any, t_low: Any, t_high: Any, alpha: int, ksize: int, sigma: Any, variant: str) -> Any:
    from .. import edges  # section II's detector (portcv.edges)

    return edges.detect(gray, t_low, t_high, alpha=alpha, ksize=ksize, sigma=sigma, variant=variant, channel_axis=None)


class MotionDetector:
    """Real-time motion detection, one frame at a time (Del Vecchio et al., section V-E).

    Each :meth:`update` computes the new frame's edges (``portcv.edges.detect``), compares them
    with the previous frame's (:func:`difference`), and returns the density counts and motion
    regions of that pair. The previous edges stay on the active backend's device between calls,
    so a stream of frames costs one edge detection per frame.

    Parameters
    ----------
    t_low, t_high : number
        Low and high gradient thresholds of the edge detector (``portcv.edges.detect``).
    beta : int
        Movement tolerance of :func:`difference` (default 12).
    grid : (int, int)
        ``(rows, cols)`` density cells (default ``(6, 10)``).
    gamma : float
        Motion threshold of :func:`regions` (default 0.01).
    alpha, ksize, sigma
        Passed to ``portcv.edges.detect`` (apron, Gaussian kernel size and sigma).
    variant : {'pseudocode', 'listing'}
        Used by every step: the edge detector (Algorithm 1 or Listing 4), :func:`difference`,
        :func:`density` and :func:`regions`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> detector = portcv.motion.MotionDetector(t_low=70, t_high=80, grid=(2, 2))
    >>> frames = portcv.data.moving_shapes(3, 48, 64, seed=0)
    >>> detector.update(frames[0]) is None        # the first frame has nothing to compare with
    True
    >>> result = detector.update(frames[1])
    >>> result.regions.shape, result.density.dtype
    ((2, 2), dtype('int32'))
    """

    def __init__(
        self,
        *,
        t_low: Any,
        t_high: Any,
        beta: int = DEFAULT_BETA,
        grid: Any = DEFAULT_GRID,
        gamma: float = DEFAULT_GAMMA,
        alpha: int = 2,
        ksize: int = 3,
        sigma: Any = None,
        variant: str = "pseudocode",
    ) -> None:
        self.t_low, self.t_high = t_low, t_high
        self.beta = _validate.integer(beta, "beta", low=0, high=65535)
        if not isinstance(grid, (tuple, list)) or len(grid) != 2:
            raise ValueError(f"grid must be a (rows, cols) pair of integers, got {grid!r}")
        self.grid = (_validate.integer(grid[0], "grid", low=1), _validate.integer(grid[1], "grid", low=1))
        self.gamma = _validate.real(gamma, "gamma")
        if not 0 <= self.gamma <= 1:  # as regions() checks it, at construction rather than the first frame
            raise ValueError(f"gamma must be a fraction of a cell in [0, 1], got {self.gamma}")
        self.alpha, self.ksize, self.sigma = alpha, ksize, sigma
        self.variant = _variant(variant)
        # The edge detector's own checks, now rather than at the first frame: a one-pixel frame
        # on the host (no compilation; one source of truth for what those parameters accept).
        from .. import edges
        from ..backends import using

        with using("numpy"):
            edges.detect(np.zeros((1, 1), np.uint8), t_low, t_high, alpha=alpha, ksize=ksize, sigma=sigma,
                         variant=self.variant)
        self._previous: Any = None
        self._shape: tuple | None = None

    @property
    def previous_edges(self) -> Any:
        """The last frame's edge map (on the device of the backend that computed it), or None."""
        return self._previous

    def reset(self) -> None:
        """Forget the previous frame (the next :meth:`update` starts a new stream)."""
        self._previous = None
        self._shape = None

    def edges(self, frame: Any) -> Any:
        """The edge map of one ``(H, W)`` gray or ``(H, W, 3)`` RGB frame, with this detector's parameters."""
        img, rgb = self._frame(frame)
        return _edges(_gray(img, rgb), self.t_low, self.t_high, self.alpha, self.ksize, self.sigma, self.variant)

    @staticmethod
    def _frame(frame: Any) -> tuple[Any, bool]:
        """The validated frame and whether it is RGB."""
        img = _validate.image(frame, "frame")
        if img.ndim == 3 and img.shape[-1] == 3:
            return img, True
        if img.ndim == 2:
            return img, False
        raise ValueError(f"frame must be (H, W) gray or (H, W, 3) RGB, got shape {tuple(img.shape)}")

    def update(self, frame: Any) -> MotionResult | None:
        """Add a frame; return the motion between it and the previous one (None for the first).

        Parameters
        ----------
        frame : (H, W) or (H, W, 3) uint8 array
            Gray or RGB; every frame of a stream has the same shape.

        Returns
        -------
        MotionResult or None
            ``regions`` (rows, cols) bool, ``density`` (rows, cols) int32, ``difference`` and
            ``edges`` (H, W) uint8, on the active backend.
        """
        img, rgb = self._frame(frame)
        shape = tuple(img.shape[:2])
        if self._previous is not None and shape != self._shape:
            raise ValueError(f"frame has shape {shape}, but this stream's frames are {self._shape}; call reset()")
        if self._previous is None:
            _grid(self.grid, *shape)  # fail on the first frame, not the second
            self._previous, self._shape = self.edges(img), shape
            return None
        params = (rgb, self.t_low, self.t_high, self.alpha, self.ksize, self.sigma, self.variant, self.beta,
                  self.grid, self.gamma)
        result = _run_chain(self._previous, img, params)
        self._previous = result.edges
        return result


def _motion_from_edges(e1: Any, e2: Any, shape: tuple, beta: int, grid: Any, gamma: float, variant: str) -> MotionResult:
    # The frames' layout was settled by the caller: maps 3 or 4 pixels wide are gray too.
    d = difference(e1, e2, beta=beta, variant=variant, channel_axis=None)
    counts = density(d, grid=grid, variant=variant, channel_axis=None)
    cells = regions(counts, shape=shape, gamma=gamma, variant=variant)
    return MotionResult(cells, counts, d, e2)


def _chain(previous: Any, frames: Any, params: tuple) -> tuple:
    """Edges of ``frames``, then the motion of each pair: ``(previous[t], edges[t])`` for a frame
    (batch) after ``previous``, or consecutive frames of a video when ``previous`` is None.
    Returns the MotionResult fields. ``params``: validated, hashable (static under jit)."""
    rgb, t_low, t_high, alpha, ksize, sigma, variant, beta, grid, gamma = params
    edges = _edges(_gray(frames, rgb), t_low, t_high, alpha, ksize, sigma, variant)
    if previous is None:
        previous, edges = edges[:-1], edges[1:]
    return tuple(_motion_from_edges(previous, edges, tuple(edges.shape[-2:]), beta, grid, gamma, variant))


@functools.lru_cache(maxsize=32)
def _whole_chain(backend_name: str, params: tuple) -> Callable:
    """:func:`_chain` compiled as one program with backend ``backend_name``'s jit (JAX). Each
    step is already a compiled kernel; jitting the chain as a whole lets XLA drop the
    intermediate arrays between the steps' programs and dispatches once per call instead of once
    per step."""
    return backends.get(backend_name).jit(functools.partial(_chain, params=params))


def _run_chain(previous: Any, frames: Any, params: tuple) -> MotionResult:
    """:func:`_chain` on the active backend: one compiled program on JAX, step by step elsewhere."""
    b = backend()
    if b.compiles_programs:
        try:
            run = _whole_chain(b.name, params)
        except TypeError:  # an unhashable parameter (an array threshold): step by step
            run = None
        if run is not None:
            return MotionResult(*run(previous, frames))
    return MotionResult(*_chain(previous, frames, params))


def detect_motion(
    video: Any,
    *,
    t_low: Any,
    t_high: Any,
    beta: int = DEFAULT_BETA,
    grid: Any = DEFAULT_GRID,
    gamma: float = DEFAULT_GAMMA,
    alpha: int = 2,
    ksize: int = 3,
    sigma: Any = None,
    variant: str = "pseudocode",
    channel_axis: Any = "auto",
) -> MotionResult:
    """Motion between every pair of consecutive frames of a video, in one batched pass.

    Edges of all ``T`` frames are computed at once, then the ``T - 1`` pairs ``(t, t + 1)`` go
    through :func:`difference`, :func:`density` and :func:`regions` as one batch: the same
    results as feeding the frames to a :class:`MotionDetector` one by one.

    Parameters
    ----------
    video : (T, H, W) or (T, H, W, 3) uint8 array
        Gray or RGB frames, ``T >= 2``.
    t_low, t_high, beta, grid, gamma, alpha, ksize, sigma, variant
        As for :class:`MotionDetector`.
    channel_axis : {"auto", -1, None}
        ``"auto"``: a 4-D video is RGB (last axis 3), a 3-D one gray, except that a 3-D array
        whose last axis has 3 or 4 entries is refused as one colour frame (a video needs a time
        axis); ``None``: ``(T, H, W)`` gray frames whatever their width; ``-1``: RGB.

    Returns
    -------
    MotionResult
        Each field has a leading axis of ``T - 1`` pairs.

    Examples
    --------
    >>> import portcv
    >>> video = portcv.data.moving_shapes(4, 48, 64, seed=0)
    >>> result = portcv.motion.detect_motion(video, t_low=70, t_high=80, grid=(2, 2))
    >>> result.regions.shape, result.difference.shape
    ((3, 2, 2), (3, 48, 64))
    """
    frames = _validate.image(video, "video", min_ndim=3)
    _validate.choice(channel_axis, "channel_axis", ("auto", -1, None))
    if channel_axis is not None and frames.ndim == 3 and frames.shape[-1] in (3, 4):
        raise ValueError(
            f"video looks like one colour frame (shape {tuple(frames.shape)}); detect_motion takes a video "
            "(T, H, W) gray or (T, H, W, 3) RGB: stack at least 2 frames, or pass channel_axis=None if "
            "these are gray frames 3 or 4 pixels wide"
        )
    if frames.ndim == 4 and frames.shape[-1] == 3 and channel_axis is not None:
        rgb = True
    elif frames.ndim == 3:
        rgb = False
    else:
        raise ValueError(f"video must be (T, H, W) gray or (T, H, W, 3) RGB, got shape {tuple(frames.shape)}")
    if frames.shape[0] < 2:
        raise ValueError(f"video needs at least 2 frames, got {frames.shape[0]}")
    h, w = frames.shape[1:3]
    cells = _grid(grid, h, w)
    variant = _variant(variant)
    return _run_chain(None, frames, (rgb, t_low, t_high, alpha, ksize, sigma, variant, beta, cells, gamma))
