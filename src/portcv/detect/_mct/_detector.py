"""The MCT face detector: packed pyramid, MCT codes, breadth-first LUT stages, grouping (thesis section 3.1)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import warnings
from typing import Any

import numpy as np

from ... import _validate, backends
from ...backends import backend, to_numpy
from .._scan._group import CANDIDATE_LIMIT, GROUP_EPS, GROUP_READ, group_and_clip, unpack_boxes
from .._scan._kernels import compact_kernel, group_kernel, pyramid_kernel, reciprocals
from .._scan._parameters import ScanParameters, check_min_neighbors, check_scale_factor, check_size_pair, to_gray
from .._scan._pyramid import level_rects, next_capacity, packed_pyramid_maps
from ._cascade_file import BUNDLED, MCTCascade, load_mct_cascade
from ._mct import mct_kernel, segment_alive_kernel

#: The thesis's scan: scale factor 1.15, window step 1 (section 2.1.3).
DEFAULT_SCALE_FACTOR = 1.15
#: Most candidates grouped on the device (CuPy's one-block ``groupRectangles``); more: the host groups.
GROUP_CAPACITY = CANDIDATE_LIMIT
#: Recorded scans a geometry keeps (each holds its own device memory: plans, codes, boxes).
RECORDINGS_KEPT = 4
#: A geometry's recording state where the backend refused to record.
_UNRECORDABLE = "unrecordable"
#: Survivor indices read with the count in a whole-plan scan (one copy a frame up to this many).
WHOLE_SCAN_HEAD = CANDIDATE_LIMIT
#: Most candidates a whole-plan scan groups in its program (group_kernel's C x C matrices; more:
#: the host groups). H200, JAX, synchronized detect at 640x480 / 1080p: 1024 0.96-1.11 / 2.05-2.23
#: ms, 4096 1.24-1.28 / 2.37-2.40, the host's grouping 1.61-2.09 / 2.79-2.93.
WHOLE_SCAN_GROUP_CAPACITY = 1024


def _segment(codes: Any, offsets: Any, plan: Any, count: Any, position_offsets: Any, lut: Any, thresholds: Any, *,
             stages: tuple, cap: int) -> tuple:
    """Stages ``stages`` (``((begin, end), ...)`` with their index) on the plan's first ``count``
    windows: ``(plan, count)`` of the survivors, compacted in ascending order into ``cap`` slots."""
    xp = backend().xp
    alive = segment_alive_kernel(codes, offsets, plan, count, position_offsets, lut, thresholds, stages=stages)
    keep, n = compact_kernel(alive, None, capacity=cap)
    return xp.take(plan, keep), n


def _codes(gray: Any, xmap: Any, ymap: Any, xtab: Any, ytab: Any, *, shape: tuple[int, int]) -> Any:
    """The packed pyramid's MCT codes, flat: code ``(r, c)`` is packed pixel ``(r + 1, c + 1)``."""
    xp = backend().xp
    return xp.reshape(mct_kernel(pyramid_kernel(gray, xmap, ymap, xtab, ytab, shape=shape)), (-1,))


def _group_candidates(plan: Any, count: Any, group_arrays: tuple, *, group: tuple, window: tuple[int, int],
                      capacity: int) -> Any:
    """group_kernel (``groupRectangles`` and the clip) of the plan's first ``count`` windows;
    ``group = (min_neighbors, width, height)``, ``group_arrays`` from
    :meth:`MCTGeometry.group_arrays`."""
    min_neighbors, width, height = group
    xp = backend().xp
    c = xp.asarray(count, dtype=xp.int32)
    # candidates_kernel's layout [count, n, idx...]; group_kernel reads idx below n only.
    parts = [xp.stack([c, c]), plan[:capacity]]
    if plan.shape[0] < capacity:
        parts.append(xp.zeros(capacity - plan.shape[0], dtype=xp.int32))
    return group_kernel(xp.concat(parts), *group_arrays, window=window, min_neighbors=min_neighbors, eps=GROUP_EPS,
                        width=width, height=height, capacity=capacity)


@dataclasses.dataclass(frozen=True)
class WholeScan:
    """What a frame's one-program scan (:func:`_whole_scan`) is compiled for: hashable, a static
    argument (one compilation each).

    Attributes
    ----------
    packed_shape : (int, int)
        The packed pyramid's shape (:class:`MCTGeometry`).
    segments : tuple
        The stage segments (:meth:`MCTDetector._segments`); a compaction follows each.
    head : int
        Survivor indices read with the count.
    group : (int, int, int) or None
        ``(min_neighbors, width, height)`` of the grouping in the program; None: no grouping.
    window : (int, int)
        The cascade's window.
    group_capacity : int
        Most candidates the program groups (more: it declines and the host groups).
    """

    packed_shape: tuple[int, int]
    segments: tuple
    head: int
    group: tuple | None
    window: tuple[int, int]
    group_capacity: int


def _whole_scan(gray: Any, geometry: tuple, tables: tuple, group_arrays: tuple | None, *, scan: WholeScan) -> tuple:
    """A frame's whole scan as one program (:func:`whole_plan_scan`): the codes, then each
    segment of stages over the full-length plan and its compaction, with no count read in
    between, then (given ``scan.group``, as :func:`_group_candidates`) the grouping.

    ``geometry`` is :meth:`MCTGeometry.on`'s ``(xmap, ymap, xtab, ytab, offsets)``, ``tables``
    :meth:`MCTDetector._cascade_on`'s ``(position_offsets, lut, thresholds)``, ``group_arrays``
    :meth:`MCTGeometry.group_arrays` (None without a grouping). Returns ``(survivors, plan, first,
    grouped)``: ``[count, plan[0], ..., plan[head - 1]]`` (int32), the plan, and group_kernel's
    first ``2 + 5 GROUP_READ`` entries and whole output (``None`` without a grouping). A frame
    reads ``first``, or ``survivors`` without a grouping or where it declined, and the plan only
    past ``head`` survivors."""
    xp = backend().xp
    xmap, ymap, xtab, ytab, offsets = geometry
    position_offsets, lut, thresholds = tables
    codes = _codes(gray, xmap, ymap, xtab, ytab, shape=scan.packed_shape)
    n = int(offsets.shape[0])
    plan, count = xp.arange(n, dtype=xp.int32), xp.asarray(n, dtype=xp.int32)
    for stages in scan.segments:
        plan, count = _segment(codes, offsets, plan, count, position_offsets, lut, thresholds, stages=stages, cap=n)
    survivors = xp.concat([xp.reshape(count, (1,)), plan[:scan.head]])
    if scan.group is None:
        return survivors, plan, None, None
    grouped = _group_candidates(plan, count, group_arrays, group=scan.group, window=scan.window,
                                capacity=scan.group_capacity)
    return survivors, plan, grouped[: 2 + 5 * GROUP_READ], grouped


def whole_plan_scan(b: Any) -> bool:
    """Whether backend ``b`` scans a frame in one compiled program: a compiled static-shape
    backend (JAX) on a GPU where the segment's Pallas kernel (``_mct_pallas.py``) runs, which costs
    nothing past the plan's count (so no host read of it)."""
    return b.static_shapes and b.pallas_usable


def whole_scan_frames(grays: Any, geometry: tuple, tables: tuple, group_arrays: tuple | None, *,
                      scan: WholeScan) -> tuple:
    """:func:`_whole_scan` of each frame of ``(T, H, W)`` ``grays`` in one program (a
    ``lax.map`` over the frames: the program does not grow with T): ``(survivors, grouped)``
    stacked per frame (``grouped`` None without a grouping)."""
    from jax import lax

    def one(gray: Any) -> tuple:
        survivors, _plan, _first, grouped = _whole_scan(gray, geometry, tables, group_arrays, scan=scan)
        return survivors, grouped

    return lax.map(one, grays)


@functools.lru_cache(maxsize=64)
def _compiled(backend_name: str, what: str) -> Any:
    b = backends.get(backend_name)
    if what == "codes":
        return b.jit(_codes, static_argnames=("shape",))
    if what in ("whole", "whole frames"):
        return b.jit(_whole_scan if what == "whole" else whole_scan_frames, static_argnames=("scan",))
    return b.jit(_segment, static_argnames=("stages", "cap"))


class MCTGeometry:
    """Host side of a scan of some pyramid levels: packed maps, window grid in (level, y, x) order.

    ``levels``: ``[(float32 factor, (w, h)), ...]`` (a contiguous run of the scale list),
    ``first``: the index of ``levels[0]`` in the whole scale list.
    """

    def __init__(self, width: int, height: int, levels: list, first: int, window: tuple[int, int], step: int) -> None:
        self.levels = levels
        self.first = first
        self.packed_shape, self.placements, self.maps = packed_pyramid_maps(width, height, [wh for _, wh in levels])
        hp, wp = self.packed_shape
        cw = wp - 2  # the valid MCT image is (hp - 2, wp - 2)
        offs, lv, xs, ys = [], [], [], []
        W, H = window
        for li, (px, py, w, h) in enumerate(self.placements):
            gx = np.arange(0, w - W + 1, step, dtype=np.int64)
            gy = np.arange(0, h - H + 1, step, dtype=np.int64)
            if gx.size == 0 or gy.size == 0:
                continue
            yy, xx = np.meshgrid(gy, gx, indexing="ij")  # raster order within a level: (y, x)
            offs.append(((py + yy) * cw + px + xx).reshape(-1))
            lv.append(np.full(yy.size, first + li, np.int32))
            xs.append(xx.reshape(-1))
            ys.append(yy.reshape(-1))
        cat = lambda a, dt: np.concatenate(a).astype(dt) if a else np.zeros(0, dt)  # noqa: E731
        self.offsets = cat(offs, np.int32)  # < (hp - 2) * (wp - 2) < 2**31
        self.level, self.x, self.y = cat(lv, np.int32), cat(xs, np.int32), cat(ys, np.int32)
        self.code_width = cw
        self._device: dict = {}

    def windows(self, idx: np.ndarray) -> np.ndarray:
        """``(level, x, y)`` int32 rows of the windows at indices ``idx``."""
        return np.stack([self.level[idx], self.x[idx], self.y[idx]], axis=1)

    def on(self, b: Any) -> tuple:
        key = b.device_key()
        hit = self._device.get(key)
        if hit is None:
            hit = tuple(b.asarray(a) for a in self.maps + (self.offsets,))
            b.synchronize()
            self._device[key] = hit
        return hit

    def start(self, b: Any) -> tuple:
        """``(plan, count)`` before the first stage on backend ``b``: every window (``arange``)
        and their number as a 0-d int32; made once per device (the segments make new arrays, so
        these are never written), two operations fewer per frame."""
        key = (b.device_key(), "start")
        hit = self._device.get(key)
        if hit is None:
            n = int(self.offsets.shape[0])
            hit = (b.asarray(np.arange(n, dtype=np.int32)), b.asarray(np.asarray(n, dtype=np.int32)))
            b.synchronize()
            self._device[key] = hit
        return hit

    def group_arrays(self, b: Any, capacity: int) -> tuple:
        """``(x, y, level, factors, recip)`` of the windows on backend ``b``: group_kernel's inputs
        (levels local to this geometry, float32 factors, float32 reciprocals); uploaded once."""
        key = (b.device_key(), "group", capacity)
        hit = self._device.get(key)
        if hit is None:
            factors = np.array([f for f, _ in self.levels], np.float32)
            host = (self.x, self.y, (self.level - self.first).astype(np.int32), factors, reciprocals(capacity))
            hit = tuple(b.asarray(a) for a in host)
            b.synchronize()
            self._device[key] = hit
        return hit


@functools.lru_cache(maxsize=None)
def _default_detector(cls: type) -> "MCTDetector":
    return cls(load_mct_cascade(BUNDLED))


def _survivors(plan: Any, count: Any) -> np.ndarray:
    """The plan's first ``count`` window indices (``count`` a host int or a 0-d device array) as
    host int64."""
    n = count if isinstance(count, int) else int(to_numpy(count))
    return to_numpy(plan[:n]).astype(np.int64)


def split_levels(windows_per_level: list[int], groups: int) -> list[tuple[int, int]]:
    """Contiguous level ranges ``[(l0, l1), ...]`` for ``groups`` devices, balanced by window count
    (greedy on the cumulative count; the thesis assigns levels to GPUs from precomputed sizes).
    Empty ranges are dropped; at most ``groups`` ranges."""
    n = len(windows_per_level)
    total = sum(windows_per_level)
    cuts = [0]
    acc = 0
    for i, w in enumerate(windows_per_level):
        acc += w
        target = total * len(cuts) / groups
        if acc >= target and len(cuts) < groups and i + 1 < n:
            cuts.append(i + 1)
    cuts.append(n)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _groups_on_device(b: Any) -> bool:
    """Whether ``b`` groups the candidates on the device: where group_kernel has an override
    (CuPy: one CUDA block), and in JAX's one-program scan on a GPU (the portable grouping's C x C
    matrices, in the same program: no host read of the survivors). Elsewhere the host groups
    (NumPy's fastest)."""
    return group_kernel.has_override(b) or whole_plan_scan(b)


def _device_scope(b: Any, device: Any) -> Any:
    """A context that makes ``device`` current for backend ``b`` (``Backend.device_scope``: a
    host backend has device 0 only)."""
    return b.device_scope(device)


class MCTDetector:
    """Face detector with an MCT cascade (Froeba and Ernst; Tek's thesis, sections 2.1 and 3.1).

    Parameters
    ----------
    cascade : MCTCascade
        From :func:`load_mct_cascade` or :func:`train_mct_cascade`; :meth:`default` loads the
        bundled ``mct_frontalface_24.npz``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> det = portcv.detect.MCTDetector.default()
    >>> boxes, neighbours = det.detect(np.zeros((64, 64), np.uint8))
    >>> boxes.shape, neighbours.shape
    ((0, 4), (0,))
    """

    def __init__(self, cascade: MCTCascade) -> None:
        if not isinstance(cascade, MCTCascade):
            raise TypeError(f"cascade must be a portcv.detect.MCTCascade, got {type(cascade).__name__}")
        self.cascade = cascade
        pos = cascade.positions.astype(np.int64)
        self._position_rows = (pos[:, 1] - 1, pos[:, 0] - 1)  # code offset = row * code_width + col
        self._device: dict = {}
        self._geometry: dict = {}
        self._lock = threading.RLock()  # the caches above (the default detector is shared)

    @classmethod
    def default(cls) -> "MCTDetector":
        """The detector with portcv's bundled ``mct_frontalface_24.npz`` (trained by
        ``tools/train_mct.py``): one instance per process, so that ``MCTDetector.default().detect``
        called frame by frame keeps its geometries, device tables and recorded scans (for a
        detector of your own, ``MCTDetector(load_mct_cascade(path))``)."""
        return _default_detector(cls)

    def __repr__(self) -> str:
        return f"<MCTDetector {self.cascade!r}>"

    def detect(self, image: Any, *, scale_factor: float = DEFAULT_SCALE_FACTOR, min_neighbors: int = 3,
               min_size: Any = (24, 24), max_size: Any = None, step: int = 1, split_stage: Any = None,
               raw: bool = False, devices: Any = None, channel_axis: Any = "auto") -> Any:
        """Detect faces at every scale: the thesis's scan with :class:`CascadeDetector`'s contract.

        Parameters
        ----------
        image : (H, W) or (H, W, C) uint8 array, or a batch (T, H, W[, C])
            Gray, or RGB (C = 3, or 4 with alpha ignored) converted with OpenCV's fixed-point
            ``RGB2GRAY``. Any backend.
        scale_factor : float
            Ratio between pyramid scales, in (1, 10]; 1.15 as in the thesis.
        min_neighbors : int
            Keep groups of more than this many candidates; 0 returns the ungrouped candidates.
        min_size, max_size : (int, int)
            Smallest / largest face ``(width, height)``; ``(24, 24)`` is the thesis's starting
            scale 1, ``(48, 48)`` its faster starting scale 2. ``max_size=None``: the image.
        step : int
            Window step in level pixels at every scale (the thesis's 1; OpenCV's step-2 rule and
            its skip rule are not used).
        split_stage : int or None
            Stages ``[0, split_stage)`` run on every window, the survivors are compacted (prefix
            sum) and the remaining stages run on that plan (the thesis's two kernels split after
            stage 2). None: 2 on CuPy; JAX on a GPU also compacts before the last stage; NumPy
            after every stage. Any value gives the same boxes.
        raw : bool
            Return the candidates before grouping (as ``min_neighbors=0``).
        devices : sequence or None
            Split the pyramid levels over these devices (CuPy device ids, JAX device indices;
            NumPy has device 0): contiguous level ranges balanced by window count, each built and
            scanned on its device; the candidates are joined in (level, y, x) order and grouped
            once, so any split gives the same boxes as one device. None: the current device.
        channel_axis : {'auto', None, -1}
            As in :func:`portcv.filters.sep_filter`.

        Returns
        -------
        boxes : (N, 4) int32 NumPy array
            ``[x, y, w, h]`` in image pixels, clipped to the image.
        neighbours : (N,) int32 NumPy array
            Candidates per box (ones for raw candidates). For a batch, a list of pairs.

        Notes
        -----
        Window ``(level, x, y)`` is a face when every stage's integer cost sum is at most its
        threshold (thesis eq. 2.3). Candidate rect ``rint(float32(x) * f)`` etc. as OpenCV;
        grouping ``groupRectangles`` (eps 0.2) and the clip on the device on CuPy (the Haar
        detector's kernel, up to 4,096 candidates; only the boxes are copied back) and on JAX
        on a GPU (in the frame's one program, up to 1,024 candidates), on the host elsewhere.
        Integer throughout: identical boxes on every backend.

        Examples
        --------
        >>> import numpy as np, portcv
        >>> det = portcv.detect.MCTDetector.default()
        >>> det.detect(np.full((40, 40), 7, np.uint8), min_neighbors=0)[0].shape   # flat: no face
        (0, 4)
        """
        factor = check_scale_factor(scale_factor)
        neighbours = check_min_neighbors(min_neighbors)
        smallest = check_size_pair(min_size, "min_size", allow_none=False)
        largest = check_size_pair(max_size, "max_size", allow_none=True)
        window_step = _validate.integer(step, "step", low=1, high=64)
        split = self._check_split_stage(split_stage)
        if _validate.boolean(raw, "raw"):
            neighbours = 0  # the candidates, ungrouped
        params = ScanParameters(scale_factor=factor, min_neighbors=neighbours, min_size=smallest, max_size=largest,
                                split_stage=split, step=window_step)
        device_ids = self._check_devices(devices)
        img = _validate.image(image)
        gray, batched = to_gray(img, channel_axis)
        if batched:
            if device_ids is None and whole_plan_scan(backend()) and gray.shape[0] > 1:
                return self._detect_frames(gray, params, device_ids)
            return [self._detect_one(gray[t], params, device_ids) for t in range(gray.shape[0])]
        return self._detect_one(gray, params, device_ids)

    def _check_split_stage(self, split_stage: Any) -> int | None:
        if split_stage is None:
            return None
        return _validate.integer(split_stage, "split_stage", low=0, high=self.cascade.n_stages)

    @staticmethod
    def _check_devices(devices: Any) -> tuple | None:
        if devices is None:
            return None
        if isinstance(devices, (str, bytes)) or not hasattr(devices, "__iter__"):
            raise TypeError(f"devices must be a sequence of device ids or None, got {type(devices).__name__}")
        devs = tuple(devices)
        if not devs:
            raise ValueError("devices must not be empty")
        for d in devs:
            _validate.integer(d, "devices", low=0, high=1023)
        return devs

    def candidates(self, image: Any, *, scale_factor: float = DEFAULT_SCALE_FACTOR, min_size: Any = (24, 24),
                   max_size: Any = None, step: int = 1, split_stage: Any = None, devices: Any = None) -> np.ndarray:
        """The windows passing every stage of a gray ``(H, W)`` uint8 image, as ``(N, 3)`` int32
        ``(level, x, y)`` rows in ascending (level, y, x) order (level coordinates)."""
        img = _validate.image(image, max_ndim=2, gray=True)
        params = ScanParameters(scale_factor=check_scale_factor(scale_factor), min_neighbors=0,
                                min_size=check_size_pair(min_size, "min_size", allow_none=False),
                                max_size=check_size_pair(max_size, "max_size", allow_none=True),
                                step=_validate.integer(step, "step", low=1, high=64),
                                split_stage=self._check_split_stage(split_stage))
        found, _, _ = self._scan(img, params, self._check_devices(devices))
        return found

    def _geometries(self, width: int, height: int, params: ScanParameters, groups: int) -> tuple[list, list]:
        from ..._resize_plans import pyramid_plan

        max_size, step = params.max_size_for(width, height), params.step
        key = (width, height, params.scale_factor, params.min_size, max_size, step, groups)
        with self._lock:
            hit = self._geometry.get(key)
            if hit is None:
                W, H = self.cascade.window
                levels = pyramid_plan(width, height, params.scale_factor, (W, H), min_size=params.min_size,
                                      max_size=max_size, name="scale_factor")
                counts = [len(range(0, max(w - W + 1, 0), step)) * len(range(0, max(h - H + 1, 0), step))
                          for _, (w, h) in levels]
                keep = [i for i, n in enumerate(counts) if n > 0]
                levels = [levels[i] for i in keep]  # levels with windows come first (a smaller window: none)
                counts = [counts[i] for i in keep]
                ranges = split_levels(counts, groups) if levels else []
                geos = [MCTGeometry(width, height, levels[a:b], a, (W, H), step) for a, b in ranges]
                hit = (levels, geos)
                if len(self._geometry) >= 8:
                    self._geometry.pop(next(iter(self._geometry)))
                self._geometry[key] = hit
        return hit

    def _cascade_on(self, b: Any, code_width: int) -> tuple:
        key = (b.device_key(), code_width)
        hit = self._device.get(key)
        if hit is None:
            c = self.cascade
            rows, cols = self._position_rows
            offs = (rows * code_width + cols).astype(np.int32)
            hit = (b.asarray(offs), b.asarray(c.lut.reshape(-1)), b.asarray(c.threshold))
            b.synchronize()
            self._device[key] = hit
        return hit

    def _segments(self, b: Any, split: int | None) -> tuple:
        """The scan's stage segments on backend ``b``: per segment, its ``(stage, (start, end))``
        position ranges; a compaction follows each segment."""
        S = self.cascade.n_stages
        if split is not None:
            bounds = sorted({0, split, S})
        elif b.runs_on_host and not b.static_shapes:
            bounds = range(S + 1)  # NumPy: a compaction is one flatnonzero, so after every stage
        elif whole_plan_scan(b):
            # Compactions cost no count read here: one more before the long last stage, so it runs
            # on that stage's windows only.
            bounds = sorted({0, min(2, S), max(S - 1, 0), S})
        else:
            bounds = sorted({0, min(2, S), S})
        ranges = self.cascade.stage_ranges()
        return tuple(tuple((j, ranges[j]) for j in range(s0, s1)) for s0, s1 in zip(bounds[:-1], bounds[1:]))

    def _scan(self, gray: Any, params: ScanParameters, devices: tuple | None,
              group: tuple | None = None) -> tuple[np.ndarray, list, Any]:
        """``(candidates, levels, grouped)``: the (level, x, y) rows passing every stage, and, given
        ``group = (min_neighbors, width, height)`` on a backend that groups on the device (one
        device), ``grouped = (rects, neighbours)`` instead of the candidates (``None`` otherwise)."""
        b = backend()
        if b.numpy_runs_faster and devices is None:
            # JAX on the CPU: the frame is already in host memory, and XLA:CPU's gathers run the
            # stage sums several times slower than NumPy's banded ones (docs/detect.md), so the
            # scan runs on NumPy, as the JAX backend's host callbacks do for single kernels. The
            # same integer scan: the same candidates.
            with backends.using("numpy"):
                return self._scan(to_numpy(gray), params, devices, group)
        height, width = gray.shape
        split = params.split_stage
        levels, geos = self._geometries(width, height, params, 1 if devices is None else len(devices))
        groups = [(g, geo) for g, geo in enumerate(geos) if geo.offsets.size]
        scopes = [functools.partial(_device_scope, b, None if devices is None else devices[g]) for g, _ in groups]
        group = group if devices is None and _groups_on_device(b) else None
        if group is not None and len(groups) == 1 and b.records_launches:
            hits = [self._recorded_scan(b, gray, groups[0][1], split, group)]
        else:
            hits = self._lockstep([self._scan_group(b, gray, geo, split, several=devices is not None, group=group)
                                   for _, geo in groups], scopes)
        if len(hits) == 1 and isinstance(hits[0], tuple):  # grouped on the device
            return np.zeros((0, 3), np.int32), levels, hits[0]
        found = [geo.windows(idx) for (_, geo), idx in zip(groups, hits) if idx.size]
        out = np.concatenate(found) if found else np.zeros((0, 3), np.int32)
        return out, levels, None

    @staticmethod
    def _lockstep(steps: list, scopes: list) -> list:
        """The results of the generators ``steps`` (one per device group, each run in its
        ``scopes`` context). Lockstep: each resumes to read its last count where it reads one (a
        wait on its own device only; CuPy reads only at the end) and launch its next segment, so
        every device has work queued while the host waits on one; run one after another, they
        would not overlap at all. Nothing runs before a generator's first next()."""
        hits: list = [None] * len(steps)
        live = list(range(len(steps)))
        while live:
            for i in list(live):
                with scopes[i]():
                    try:
                        next(steps[i])
                    except StopIteration as done:
                        hits[i] = done.value
                        live.remove(i)
        return hits

    @classmethod
    def _finish(cls, step: Any) -> Any:
        """The result of one generator of :meth:`_scan_group`, run to its end in the current
        device scope."""
        return cls._lockstep([step], [contextlib.nullcontext])[0]

    def _recorded_scan(self, b: Any, gray: Any, geo: MCTGeometry, split: int | None, group: tuple) -> Any:
        """:meth:`_scan_group`'s result for one device that groups on it and records launches
        (CuPy): the frame's fifteen or so launches (pyramid, codes, segments, compactions, the
        grouping's inputs and kernel) recorded once per geometry as a CUDA graph, at its second
        frame (the first compiles the kernels and caches the tables), and replayed from then on:
        one launch instead of one host dispatch each. Same launches, same bits. A geometry keeps
        its last ``RECORDINGS_KEPT`` recordings (one per ``min_neighbors`` and ``split_stage``)."""
        key = (b.device_key(), "recorded", split, group, GROUP_CAPACITY)
        with self._lock:
            rec = geo._device.get(key)
            if rec is None:  # the geometry's first frame here: run as usual
                geo._device[key] = False
            elif rec is False:
                rec = self._record(b, gray, geo, split, group)
                held = [k for k, v in geo._device.items() if k[1:2] == ("recorded",) and v is not False
                        and v is not _UNRECORDABLE]
                for old in held[:max(0, len(held) - RECORDINGS_KEPT + 1)]:
                    geo._device[old] = False  # recorded again if asked for again
                geo._device[key] = rec
        if rec is None or rec is _UNRECORDABLE:
            return self._finish(self._scan_group(b, gray, geo, split, several=False, group=group))
        with rec.lock:  # the outputs are read before another thread's replay rewrites them
            plan, count, grouped = rec.replay(gray)
            boxes = self._read_group(grouped)
            return boxes if boxes is not None else _survivors(plan, count)

    def _record(self, b: Any, gray: Any, geo: MCTGeometry, split: int | None, group: tuple) -> Any:
        """The recording of ``geo``'s scan (launches only) reading a frame buffer of ``gray``'s
        shape, or ``_UNRECORDABLE`` with a warning where the backend cannot record (the
        launches then run one by one: the same bits)."""
        frame = b.xp.empty(tuple(gray.shape), dtype=b.xp.uint8)
        try:
            return b.record(lambda: self._finish(self._scan_group(b, frame, geo, split, several=False, group=group,
                                                                  launch_only=True)), frame)
        except Exception as exc:  # a driver or device that cannot capture graphs
            warnings.warn(f"portcv: the MCT scan could not be recorded ({type(exc).__name__}: {exc}); "
                          "it runs its launches one by one", RuntimeWarning, stacklevel=2)
            return _UNRECORDABLE

    def _scan_group(self, b: Any, gray: Any, geo: MCTGeometry, split: int | None, several: bool,
                    group: tuple | None = None, launch_only: bool = False) -> Any:
        """A generator over the stage segments of ``geo``'s windows: each step launches one segment
        (asynchronously) and yields; it returns the indices of the windows passing every stage,
        ascending (one count read per segment, or on CuPy one at the end), or, given ``group``,
        their grouped boxes (one copy of the boxes instead of the indices) when they fit the
        device grouping. ``launch_only`` (CuPy, with ``group``): no read at all; it returns the
        device arrays ``(plan, count, grouped)`` for :meth:`_recorded_scan`."""
        if several and b.owns(gray) and not b.runs_on_host:
            # CuPy's copy lands on the current device (across devices too); a JAX array committed
            # to one device keeps its computations there (same bits, no overlap): pass host frames.
            gray = gray.copy()
        gray = b.asarray(gray)
        if whole_plan_scan(b):
            # One program and one read a frame: the survivors' count and first indices, or the
            # first grouped boxes (the count and the whole plan stay on the device).
            survivors, plan, first, grouped = self._launch_whole(b, gray, geo, split, group)
            yield
            if group is not None:
                boxes = self._read_group(grouped, first)
                if boxes is not None:
                    return boxes  # else declined: more candidates than its capacity
            survivors = to_numpy(survivors)
            count = int(survivors[0])
            found = survivors[1:1 + count] if count < survivors.shape[0] else to_numpy(plan)[:count]
            return found.astype(np.int64)
        xmap, ymap, xtab, ytab, offsets = geo.on(b)
        position_offsets, lut, thresholds = self._cascade_on(b, geo.code_width)
        segments = self._segments(b, split)
        codes = _compiled(b.name, "codes")(gray, xmap, ymap, xtab, ytab, shape=geo.packed_shape)
        segment = _compiled(b.name, "segment")
        n = int(offsets.shape[0])
        # Eager device backends (CuPy): a segment reads the survivors' count on the device and
        # ignores the plan's slots past it, so the host reads nothing between segments: with the
        # grouping on the device, one wait per frame instead of one per segment.
        defer = not b.static_shapes and not b.runs_on_host
        plan, count_dev = geo.start(b)
        count = n
        for stages in segments:
            plan, count_dev = segment(codes, offsets, plan, count_dev, position_offsets, lut, thresholds,
                                      stages=stages, cap=int(plan.shape[0]))
            yield
            if defer:
                continue
            count = int(to_numpy(count_dev))
            if count == 0:
                return np.zeros(0, np.int64)
            # Cut the plan to the survivors: exactly on NumPy, to a capacity of the 8-per-octave
            # ladder on static-shape ones (each capacity is one compilation).
            cap = next_capacity(count, int(plan.shape[0])) if b.static_shapes else count
            plan = plan[:cap]
        if launch_only:
            return plan, count_dev, self._group_on_device(b, geo, plan, count_dev, group)
        if group is not None and (defer or count <= GROUP_CAPACITY):
            # Deferred, the count is still on the device: group_kernel declines above its capacity.
            grouped = self._read_group(self._group_on_device(b, geo, plan, count_dev if defer else count, group))
            if grouped is not None:
                return grouped
        return _survivors(plan, count_dev if defer else count)

    def _group_on_device(self, b: Any, geo: MCTGeometry, plan: Any, count: Any, group: tuple) -> Any:
        """``groupRectangles`` and the clip of the plan's first ``count`` windows (a host int or
        the device's 0-d count) by group_kernel (the Haar detector's), launched: its device output,
        for :meth:`_read_group`."""
        return _group_candidates(plan, count, geo.group_arrays(b, GROUP_CAPACITY), group=group,
                                 window=self.cascade.window, capacity=GROUP_CAPACITY)

    @staticmethod
    def _read_group(grouped: Any, first: Any = None) -> Any:
        """``(rects, neighbours)`` from group_kernel's output (one copy of its first boxes, a
        second only past ``GROUP_READ``; ``first``: those first entries, already cut on the
        device), or None if it declined (more than ``GROUP_CAPACITY`` windows)."""
        first = to_numpy(grouped[: 2 + 5 * GROUP_READ] if first is None else first)
        m = int(first[1])
        if m < 0:
            return None
        return unpack_boxes(first if m <= GROUP_READ else to_numpy(grouped))

    def _detect_one(self, gray: Any, params: ScanParameters, devices: tuple | None) -> tuple[np.ndarray, np.ndarray]:
        height, width = gray.shape
        neighbours = params.min_neighbors
        found, levels, grouped = self._scan(gray, params, devices,
                                            group=(neighbours, width, height) if neighbours > 0 else None)
        if grouped is not None:
            return grouped
        return self._boxes(found, levels, neighbours, width, height)

    def _boxes(self, found: np.ndarray, levels: list, min_neighbors: int, width: int, height: int) -> tuple:
        """``(boxes, neighbours)`` of candidates ``found`` (``(level, x, y)`` rows), grouped on
        the host."""
        if found.shape[0] == 0:
            return np.zeros((0, 4), np.int32), np.zeros(0, np.int32)
        factors = np.array([f for f, _ in levels], np.float32)
        rects = level_rects(factors, found[:, 0], found[:, 1], found[:, 2], self.cascade.window)
        return group_and_clip(rects, min_neighbors, width, height)

    def _detect_frames(self, gray: Any, params: ScanParameters, devices: tuple | None) -> list:
        """:meth:`_detect_one` of each frame of a ``(T, H, W)`` batch where the backend scans a
        frame in one program (:func:`whole_plan_scan`): one program for the whole batch (the
        frame's program mapped over the frames) and one read of every frame's grouped boxes and
        survivors. A frame whose survivors do not fit the read is scanned again alone."""
        b = backend()
        frames, height, width = gray.shape
        levels, geos = self._geometries(width, height, params, 1)
        used = [geo for geo in geos if geo.offsets.size]
        if len(used) != 1:  # no window at all (or a split geometry): frame by frame
            return [self._detect_one(gray[t], params, devices) for t in range(frames)]
        geo = used[0]
        neighbours = params.min_neighbors
        group = (neighbours, width, height) if neighbours > 0 else None
        survivors, grouped = self._launch_whole(b, b.asarray(gray), geo, params.split_stage, group, frames=True)
        survivors = to_numpy(survivors)
        grouped = None if grouped is None else to_numpy(grouped)
        out = []
        for t in range(frames):
            if grouped is not None:
                boxes = self._read_group(grouped[t])
                if boxes is not None:
                    out.append(boxes)
                    continue
            count = int(survivors[t, 0])
            if count >= survivors.shape[1]:  # more survivors than the read holds
                out.append(self._detect_one(gray[t], params, devices))
                continue
            found = geo.windows(survivors[t, 1:1 + count])
            out.append(self._boxes(found, levels, neighbours, width, height))
        return out

    def _launch_whole(self, b: Any, gray: Any, geo: MCTGeometry, split: int | None, group: Any,
                      frames: bool = False) -> tuple:
        """Launch the one-program scan of frame ``gray``: :func:`_whole_scan`'s outputs; with
        ``frames``, of every frame of a ``(T, H, W)`` batch in one program:
        ``(survivors, grouped)`` stacked per frame (:func:`whole_scan_frames`)."""
        scan = WholeScan(packed_shape=geo.packed_shape, segments=self._segments(b, split),
                         head=min(int(geo.offsets.shape[0]), WHOLE_SCAN_HEAD), group=group, window=self.cascade.window,
                         group_capacity=WHOLE_SCAN_GROUP_CAPACITY)
        group_arrays = None if group is None else geo.group_arrays(b, scan.group_capacity)
        return _compiled(b.name, "whole frames" if frames else "whole")(
            gray, geo.on(b), self._cascade_on(b, geo.code_width), group_arrays, scan=scan)
