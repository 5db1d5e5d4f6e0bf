"""Timing a backend over a video: per-frame statistics and the motion detector's run."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Iterable

import numpy as np

from .. import _validate


def fps_statistics(seconds: Iterable[float]) -> dict[str, float]:
    """Del Vecchio et al.'s Table VII statistics of per-frame-pair processing times.

    Each pair's frame rate is ``1 / seconds``; the result holds the ``average`` (mean of those
    rates), ``median``, ``min``, ``max`` and ``std`` (population standard deviation) of the
    rates, plus ``pairs`` and ``throughput`` (pairs divided by the total time).

    Examples
    --------
    >>> stats = fps_statistics([0.1, 0.1, 0.05])
    >>> stats["average"], stats["median"], stats["max"], stats["pairs"]
    (13.333333333333334, 10.0, 20.0, 3)
    """
    if isinstance(seconds, (str, bytes)) or not hasattr(seconds, "__iter__"):
        raise TypeError(f"seconds must be an iterable of numbers, got {type(seconds).__name__}")
    times = []
    for s in seconds:
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)):
            raise TypeError(f"seconds must hold numbers, got {type(s).__name__}")
        times.append(float(s))
    if not times:
        raise ValueError("seconds must hold at least one time")
    if any(not math.isfinite(s) or s <= 0 for s in times):
        raise ValueError("seconds must be finite and > 0")
    rates = [1.0 / s for s in times]
    return {
        "average": statistics.fmean(rates),
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "std": statistics.pstdev(rates),
        "pairs": len(rates),
        "throughput": len(rates) / sum(times),
    }


def run_motion(
    frames: Iterable[Any],
    *,
    backend: str,
    detector: dict[str, Any],
    on_result: Callable[[np.ndarray, Any], None] | None = None,
    warmup: bool = True,
) -> list[float]:
    """Run the motion chain over a stream of host frames on ``backend``; return each pair's seconds.

    Every frame is moved to the device, its edges computed and compared with the previous
    frame's (:class:`portcv.motion.MotionDetector`), and the pair's motion regions copied back
    to the host; a pair's time runs from the decoded host frame to its regions on the host, so
    decoding, drawing and encoding are not counted. ``warmup`` first runs the chain once on a
    copy of the first frame (compiling kernels, tracing JAX) outside the timed loop.

    Parameters
    ----------
    frames : iterable of (H, W) or (H, W, 3) uint8 NumPy arrays
    backend : str
        A portcv backend name (``'numpy'``, ``'cupy'``, ``'jax'``).
    detector : dict
        Keyword arguments of :class:`portcv.motion.MotionDetector` (``t_low``, ``t_high``, ...).
    on_result : callable, optional
        Called as ``on_result(frame, result)`` after every frame (``result`` is None for the
        first), outside the timed region: draw, write, display.
    warmup : bool

    Returns
    -------
    list of float
        Seconds per frame pair (one fewer than the frames).

    Examples
    --------
    >>> import portcv
    >>> video = portcv.data.moving_shapes(4, 48, 64)
    >>> times = portcv.video.run_motion(video, backend="numpy", detector={"t_low": 70, "t_high": 80, "grid": (2, 2)})
    >>> len(times)
    3
    """
    import portcv

    from ..motion import MotionDetector

    if not isinstance(detector, dict):
        raise TypeError(f"detector must be a dict of MotionDetector's keyword arguments, got {type(detector).__name__}")
    if on_result is not None and not callable(on_result):
        raise TypeError(f"on_result must be a function or None, got {type(on_result).__name__}")
    warmup = _validate.boolean(warmup, "warmup")
    b = portcv.backends.get(backend)
    times: list[float] = []
    with portcv.using(b.name):
        motion = MotionDetector(**detector)
        first = True
        for frame in frames:
            if first and warmup:  # the same calls as the timed ones, so nothing compiles later
                motion.update(portcv.asarray(frame))
                portcv.to_numpy(motion.update(portcv.asarray(frame)).regions)
                motion.reset()
            first = False
            t0 = time.perf_counter()
            result = motion.update(portcv.asarray(frame))
            if result is not None:
                regions = portcv.to_numpy(result.regions)  # waits for the device
                times.append(time.perf_counter() - t0)
            else:
                regions = None
            if on_result is not None:
                on_result(frame, None if result is None else result._replace(regions=regions))
    return times
