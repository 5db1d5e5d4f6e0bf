"""The quick comparison behind ``portcv bench``: a registry of operations, timed by ``portcv._timing``.

Each :class:`Op` is one portcv call on a frame (RGB or gray), with an optional OpenCV twin that
runs on the host NumPy frame. :func:`operations` lists the registry entries whose function
exists in this portcv, plus every other public function of ``portcv.filters``, ``portcv.color``
and ``portcv.transform`` whose first parameter is ``image`` and which runs with the image alone
(found by a trial call on a small frame), so new functions show up without an edit here.

:func:`compare` times each operation on each backend with device synchronization
(``Backend.block``): a warm-up call first (JIT and kernel compilation are not timed), then the
median of up to ``repeat`` calls within a time budget. The full asv suite (``asv_bench/``) is
the measurement of record; this is the five-minute look.
"""

from __future__ import annotations

import importlib
import inspect
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

import portcv
import portcv.backends

from .. import _timing as timing
from ..backends import REFERENCE

#: The host peer's name in the results.
OPENCV = "opencv"
#: Modules whose public functions are benchmarked.
MODULES = ("filters", "color", "transform")

_REFLECT101 = 4  # cv2.BORDER_REFLECT_101


@dataclass(frozen=True)
class Op:
    """One operation: ``call(image)`` under the current backend; ``opencv(cv2, image)`` on the host."""

    name: str
    kind: str  # "rgb" or "gray": the input frame
    call: Callable[[Any], Any]
    opencv: Callable[[Any, np.ndarray], Any] | None = None
    function: str = ""  # "module.function", for matching discovered functions


def _fn(module: str, name: str) -> Callable | None:
    mod = getattr(portcv, module, None)
    return getattr(mod, name, None)


def _registry() -> list[Op]:
    """The hand-written entries (arguments and OpenCV twins); entries whose function is missing are left out."""
    f, c, t = "filters", "color", "transform"
    entries: list[tuple[str, str, str, str, Callable[[Callable], Callable], Callable | None]] = [
        ("rgb_to_gray", c, "rgb_to_gray", "rgb", lambda fn: fn,
         lambda cv2, x: cv2.cvtColor(x, cv2.COLOR_RGB2GRAY)),
        ("gaussian_blur k5", f, "gaussian_blur", "gray", lambda fn: lambda x: fn(x, ksize=5, sigma=1.2),
         lambda cv2, x: cv2.GaussianBlur(x, (5, 5), 1.2, sigmaY=1.2, borderType=_REFLECT101)),
        ("box_blur k5", f, "box_blur", "gray", lambda fn: lambda x: fn(x, 5),
         lambda cv2, x: cv2.blur(x, (5, 5), borderType=_REFLECT101)),
        ("sep_filter [1,2,1]/16", f, "sep_filter", "gray", lambda fn: lambda x: fn(x, [1, 2, 1], [1, 2, 1], 4),
         lambda cv2, x: cv2.sepFilter2D(x, -1, np.float32([0.25, 0.5, 0.25]), np.float32([0.25, 0.5, 0.25]),
                                        borderType=_REFLECT101)),
        ("convolve2d 3x3/16", f, "convolve2d", "gray",
         lambda fn: lambda x: fn(x, np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]), 4),
         lambda cv2, x: cv2.filter2D(x, -1, np.float32([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16,
                                     borderType=_REFLECT101)),
        ("mean_filter k5", f, "mean_filter", "gray", lambda fn: lambda x: fn(x, 5), None),
        ("sobel dx", f, "sobel", "gray", lambda fn: lambda x: fn(x, 1, 0),
         lambda cv2, x: cv2.Sobel(x, cv2.CV_16S, 1, 0, ksize=3, borderType=_REFLECT101)),
        ("median_filter k5", f, "median_filter", "gray", lambda fn: lambda x: fn(x, 5),
         lambda cv2, x: cv2.medianBlur(x, 5)),
        ("integral", t, "integral", "gray", lambda fn: fn,
         lambda cv2, x: cv2.integral(x, sdepth=cv2.CV_32S)),
        ("resize 1/2 bilinear", t, "resize", "gray", lambda fn: lambda x: fn(x, scale=0.5),
         lambda cv2, x: cv2.resize(x, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_LINEAR)),
        ("edges detect (Del Vecchio)", "edges", "detect", "gray", lambda fn: lambda x: fn(x, 70, 80), None),
        ("canny 50/150", "edges", "canny", "gray", lambda fn: lambda x: fn(x, 50, 150),
         lambda cv2, x: cv2.Canny(x, 50, 150)),
    ]
    ops = []
    for label, module, name, kind, bind, twin in entries:
        fn = _fn(module, name)
        if fn is not None:
            ops.append(Op(label, kind, bind(fn), twin, f"{module}.{name}"))
    return ops


def _discover(known: set[str], probe: dict[str, np.ndarray]) -> list[Op]:
    """Public image functions of :data:`MODULES` not in ``known`` that run on an image alone."""
    ops = []
    for module in MODULES:
        try:
            mod = importlib.import_module(f"portcv.{module}")
        except ImportError:
            continue
        for name in getattr(mod, "__all__", []):
            fn = getattr(mod, name, None)
            key = f"{module}.{name}"
            if key in known or not inspect.isfunction(fn):
                continue
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                continue
            if not params or params[0].name != "image":
                continue
            required = [p for p in params[1:] if p.default is inspect.Parameter.empty
                        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if required:
                continue
            for kind in ("gray", "rgb"):
                try:
                    with portcv.using("numpy"):
                        fn(probe[kind])
                except Exception:  # noqa: BLE001 - any failure: try the other input, else leave it out
                    continue
                ops.append(Op(name, kind, fn, None, key))
                break
    return ops


def operations(select: Iterable[str] | None = None) -> list[Op]:
    """The registry plus discovered functions; ``select``: keep ops whose name contains one of these."""
    ops = _registry()
    rgb = portcv.data.synthetic_rgb(48, 64, seed=0)
    with portcv.using("numpy"):
        probe = {"rgb": rgb, "gray": portcv.to_numpy(portcv.color.rgb_to_gray(rgb))}
    ops += _discover({op.function for op in ops}, probe)
    if select:
        words = [s.strip() for s in select if s.strip()]
        ops = [op for op in ops if any(w in op.name for w in words)]
    return ops


@dataclass
class Result:
    op: str
    backend: str
    device: str = ""
    median_ms: float | None = None
    first_ms: float | None = None
    calls: int = 0
    same_as_numpy: bool | None = None  # portcv backends only
    error: str = ""
    extra: dict = field(default_factory=dict)


def _host(out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return [_host(o) for o in out]
    return portcv.to_numpy(out)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:120]


def compare(ops: list[Op], backends: list[str], *, width: int, height: int, repeat: int = 10,
            budget_s: float = 1.0, opencv: bool = True,
            progress: Callable[[str], None] | None = None) -> tuple[list[str], list[Result]]:
    """Time every op on every backend (and OpenCV); return the columns run and the results.

    Unavailable backends are left out of the columns. NumPy, when among ``backends``, is the
    reference for the speedups and for the bit check of the other portcv backends.
    """
    rgb = portcv.data.synthetic_rgb(height, width, seed=0)
    with portcv.using("numpy"):
        gray = portcv.to_numpy(portcv.color.rgb_to_gray(rgb))
    frames = {"rgb": rgb, "gray": gray}
    loaded = []
    for name in backends:
        try:
            loaded.append(portcv.backends.get(name))
        except (portcv.BackendUnavailableError, ValueError):
            continue
    cv2 = None
    if opencv:
        try:
            import cv2  # type: ignore[no-redef]
        except ImportError:
            cv2 = None
    columns = [b.name for b in loaded] + ([OPENCV] if cv2 is not None else [])
    results: list[Result] = []
    for op in ops:
        reference = None
        for b in loaded:
            if progress:
                progress(f"{op.name} on {b.name}")
            r = Result(op.name, b.name, b.device)
            try:
                with portcv.using(b.name):
                    x = b.block(portcv.asarray(frames[op.kind]))
                    first, times, out = timing.warm_then_synced_s(lambda: op.call(x), b.block, max_calls=repeat,
                                                                  budget_s=budget_s)
                r.first_ms, r.median_ms, r.calls = first * 1e3, statistics.median(times) * 1e3, len(times)
                host = _host(out)
                if b.name == REFERENCE:
                    reference = host
                elif reference is not None:
                    r.same_as_numpy = _same(host, reference)
            except Exception as exc:  # noqa: BLE001 - report the op as failed on this backend, go on
                r.error = _short(exc)
            results.append(r)
        if cv2 is not None:
            r = Result(op.name, OPENCV, "cpu")
            if op.opencv is None:
                r.error = "no OpenCV twin"
            else:
                if progress:
                    progress(f"{op.name} on OpenCV")
                try:
                    x = frames[op.kind]
                    first, times, _ = timing.warm_then_synced_s(lambda: op.opencv(cv2, x), max_calls=repeat,
                                                                budget_s=budget_s)
                    r.first_ms, r.median_ms, r.calls = first * 1e3, statistics.median(times) * 1e3, len(times)
                except Exception as exc:  # noqa: BLE001
                    r.error = _short(exc)
            results.append(r)
    return columns, results


def speedups(results: list[Result]) -> dict[tuple[str, str], float]:
    """``(op, backend) -> NumPy median / backend median`` where both were measured."""
    numpy_ms = {r.op: r.median_ms for r in results if r.backend == REFERENCE and r.median_ms}
    return {(r.op, r.backend): numpy_ms[r.op] / r.median_ms
            for r in results if r.median_ms and r.op in numpy_ms}
