"""OpenCV cascade XML -> :class:`Cascade`, a flat array form that every backend evaluates.

Both layouts OpenCV reads are accepted (``docs/opencv-arithmetic.md``):

- the new format (``opencv-cascade-classifier``, what ``cv2.data.haarcascades`` ships):
  ``cascade/{featureType, width, height, featureParams, stages/_/{stageThreshold,
  weakClassifiers/_/{internalNodes, leafValues}}, features/_}``, Haar (incl. tilted features
  and multi-node trees) or LBP (``maxCatCount=256``: eight 32-bit words per node);
- the old format (``opencv-haar-classifier``): ``size``, ``stages/_/{trees/_/_/{feature,
  threshold, left_val|left_node, right_val|right_node}, stage_threshold}``; every node becomes a
  feature, ``parent``/``next`` are ignored (a tree of stages runs as a linear cascade, as in
  OpenCV).

Parsing is defensive: at most :data:`MAX_XML_BYTES`, no DTD (so no entity expansion), every
count, index and rectangle checked, and any problem is a ``ValueError`` naming the file. The
scikit-image copy of OpenCV's LBP face cascade spells ``featureParams`` as ``featuhreParams``;
cv2 refuses it, this loader accepts it (and records that in ``Cascade.notes``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

__all__ = ["Cascade", "parse_cascade", "MAX_XML_BYTES", "MAX_FIXED_SHIFT", "MAX_WINDOW_AREA"]

#: Largest cascade file read (the biggest shipped one, alt_tree, is 2.7 MB).
MAX_XML_BYTES = 64 * 2**20
#: Leaves and stage thresholds become integers at scale 2**k with k at most this.
MAX_FIXED_SHIFT = 40
#: Window area bound: a squared-pixel sum over a window stays below 2**32 (uint32 integrals).
MAX_WINDOW_AREA = (2**32 - 1) // (255 * 255)
#: OpenCV's ``THRESHOLD_EPS``: stage thresholds are ``float32(xml) - 1e-5f``.
STAGE_THRESHOLD_EPS = np.float32(1e-5)
#: Bound on the entries of one cascade (stages, trees, nodes, features).
MAX_ENTRIES = 1_000_000
#: Deepest tree accepted.
MAX_TREE_DEPTH = 64


@dataclasses.dataclass(frozen=True, eq=False)
class Cascade:
    """A boosted cascade in flat arrays (host NumPy, C-contiguous); see ``docs/detect.md``.

    Stages ``s`` own trees ``stage_tree_start[s]:stage_tree_start[s+1]``; tree ``t`` owns nodes
    ``tree_node_start[t]:tree_node_start[t+1]`` and leaves ``tree_leaf_start[t]:...[t+1]``. A
    child index ``> 0`` is a node (local to its tree), ``<= 0`` is leaf ``-index``. Haar
    features have up to three rectangles ``[x, y, w, h]`` with integer weights (unused: zeros);
    LBP features have the top-left block of their 3x3 grid. ``leaf_fixed = leaf_value * 2**k``
    and ``stage_threshold_fixed = ceil(stage_threshold * 2**k)`` (``k = fixed_shift``), so a
    stage passes iff the integer sum of its trees' leaves is ``>= stage_threshold_fixed``,
    exactly OpenCV's double-precision ``sum >= threshold``.

    The public entry point is :func:`portcv.detect.load_cascade` (its docstring has the example).
    """

    feature_type: str
    window: tuple[int, int]
    has_tilted: bool
    stage_tree_start: np.ndarray
    stage_threshold: np.ndarray
    stage_threshold_fixed: np.ndarray
    tree_node_start: np.ndarray
    tree_leaf_start: np.ndarray
    node_feature: np.ndarray
    node_left: np.ndarray
    node_right: np.ndarray
    node_threshold: np.ndarray
    node_threshold_sq: np.ndarray
    node_subset: np.ndarray
    leaf_value: np.ndarray
    leaf_fixed: np.ndarray
    feature_rect: np.ndarray
    feature_weight: np.ndarray
    feature_tilted: np.ndarray
    fixed_shift: int
    tree_depth: np.ndarray
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def n_stages(self) -> int:
        return int(self.stage_threshold.shape[0])

    @property
    def n_trees(self) -> int:
        return int(self.tree_node_start.shape[0] - 1)

    def stage_layout(self) -> tuple[tuple[int, int, int], ...]:
        """Per stage ``(first tree, end tree, deepest tree's depth)``: static, hashable."""
        out = []
        for s in range(self.n_stages):
            t0, t1 = int(self.stage_tree_start[s]), int(self.stage_tree_start[s + 1])
            depth = int(self.tree_depth[t0:t1].max()) if t1 > t0 else 0
            out.append((t0, t1, depth))
        return tuple(out)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays the evaluation kernel takes, in its positional order."""
        return (self.stage_threshold_fixed, self.tree_node_start, self.tree_leaf_start, self.node_feature,
                self.node_left, self.node_right, self.node_threshold, self.node_threshold_sq, self.node_subset,
                self.leaf_fixed, self.feature_rect, self.feature_weight, self.feature_tilted)

    def truncated(self, n_stages: int) -> "Cascade":
        """The first ``n_stages`` stages (for tests and experiments); shares the tables."""
        if not 1 <= n_stages <= self.n_stages:
            raise ValueError(f"n_stages must be in [1, {self.n_stages}], got {n_stages}")
        return dataclasses.replace(
            self,
            stage_tree_start=self.stage_tree_start[: n_stages + 1].copy(),
            stage_threshold=self.stage_threshold[:n_stages].copy(),
            stage_threshold_fixed=self.stage_threshold_fixed[:n_stages].copy(),
        )


class _Error(ValueError):
    pass


def _fail(where: str, what: str) -> None:
    raise _Error(f"{where}: {what}")


def _numbers(text: str | None, where: str) -> list[str]:
    return (text or "").split()


def _to_int(tok: str, where: str) -> int:
    try:
        value = int(tok)
    except ValueError:
        _fail(where, f"expected an integer, got {tok[:40]!r}")
    if abs(value) > 2**31:
        _fail(where, f"integer {value} out of range")
    return value


def _to_float(tok: str, where: str) -> float:
    try:
        value = float(tok)
    except ValueError:
        _fail(where, f"expected a number, got {tok[:40]!r}")
    if not math.isfinite(value):
        _fail(where, f"non-finite number {tok[:40]!r}")
    return value


def _child(elem: ET.Element, tag: str, where: str, *alternatives: str) -> ET.Element:
    for name in (tag,) + alternatives:
        found = elem.find(name)
        if found is not None:
            return found
    _fail(where, f"missing <{tag}>")
    raise AssertionError  # unreachable


def _items(elem: ET.Element) -> list[ET.Element]:
    items = [c for c in elem if c.tag == "_"]
    if len(items) > MAX_ENTRIES:
        _fail(elem.tag, f"more than {MAX_ENTRIES} entries")
    return items


def _read_bytes(path: str) -> bytes:
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise FileNotFoundError(f"cascade file {path!r} not found ({exc.strerror})") from exc
    if size > MAX_XML_BYTES:
        raise ValueError(f"{path}: {size} bytes; cascade files larger than {MAX_XML_BYTES} bytes are refused")
    with open(path, "rb") as f:
        return f.read(MAX_XML_BYTES + 1)


_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def parse_cascade(data: bytes, source: str = "<bytes>") -> Cascade:
    """Parse cascade XML bytes (see the module docstring); ``ValueError`` naming ``source``."""
    if len(data) > MAX_XML_BYTES:
        raise ValueError(f"{source}: more than {MAX_XML_BYTES} bytes; refused")
    if _DTD.search(data):
        raise ValueError(f"{source}: XML with a DOCTYPE or ENTITY declaration is refused (no entity expansion)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"{source}: not well-formed XML ({exc})") from exc
    # <opencv_storage><cascade ...> or the classifier element itself.
    node = root
    if root.tag == "opencv_storage":
        children = list(root)
        if not children:
            raise ValueError(f"{source}: empty <opencv_storage>")
        node = children[0]
    try:
        type_id = node.get("type_id", "")
        if type_id == "opencv-haar-classifier" or (node.find("size") is not None and node.find("featureType") is None):
            raw = _parse_old(node)
        else:
            raw = _parse_new(node)
        return _flatten(raw, source)
    except _Error as exc:
        raise ValueError(f"{source}: {exc}") from None


# --------------------------------------------------------------------------------------------
# The two layouts -> one raw form: {type, window, stages: [(thr, [tree...])], features: [...]}
# tree = (nodes [(left, right, feature, thr or subset)], leaves [float])
# --------------------------------------------------------------------------------------------
def _parse_new(node: ET.Element) -> dict:
    notes = []
    stage_type = (_child(node, "stageType", "cascade").text or "").strip()
    if stage_type != "BOOST":
        _fail("stageType", f"only BOOST cascades are supported, got {stage_type!r}")
    ftype = (_child(node, "featureType", "cascade").text or "").strip().upper()
    if ftype not in ("HAAR", "LBP"):
        _fail("featureType", f"only HAAR and LBP cascades are supported, got {ftype!r}")
    width = _to_int((_child(node, "width", "cascade").text or "").strip(), "width")
    height = _to_int((_child(node, "height", "cascade").text or "").strip(), "height")
    if ftype == "LBP":
        params = node.find("featureParams")
        if params is None and node.find("featuhreParams") is not None:
            params = node.find("featuhreParams")
            notes.append("tag <featuhreParams> read as <featureParams> (the typo in scikit-image's copy)")
        if params is None:
            _fail("cascade", "missing <featureParams>")
        cats = _to_int((_child(params, "maxCatCount", "featureParams").text or "").strip(), "maxCatCount")
        if cats != 256:
            _fail("maxCatCount", f"LBP cascades need maxCatCount 256, got {cats}")
    per_node = 4 if ftype == "HAAR" else 11
    stages = []
    for si, st in enumerate(_items(_child(node, "stages", "cascade"))):
        where = f"stage {si}"
        thr = _to_float((_child(st, "stageThreshold", where).text or "").strip(), f"{where} stageThreshold")
        trees = []
        for ti, wc in enumerate(_items(_child(st, "weakClassifiers", where))):
            tw = f"{where} tree {ti}"
            toks = _numbers(_child(wc, "internalNodes", tw).text, tw)
            if not toks or len(toks) % per_node:
                _fail(tw, f"internalNodes holds {len(toks)} numbers, not a positive multiple of {per_node}")
            nodes = []
            for k in range(0, len(toks), per_node):
                left, right, feat = (_to_int(t, tw) for t in toks[k : k + 3])
                if ftype == "HAAR":
                    param: Any = _to_float(toks[k + 3], tw)
                else:
                    param = [_to_int(t, tw) & 0xFFFFFFFF for t in toks[k + 3 : k + 11]]
                nodes.append((left, right, feat, param))
            leaves = [_to_float(t, tw) for t in _numbers(_child(wc, "leafValues", tw).text, tw)]
            trees.append((nodes, leaves))
        stages.append((thr, trees))
    features = []
    for fi, f in enumerate(_items(_child(node, "features", "cascade"))):
        where = f"feature {fi}"
        if ftype == "HAAR":
            features.append(_haar_feature(f, where))
        else:
            toks = _numbers(_child(f, "rect", where).text, where)
            if len(toks) != 4:
                _fail(where, f"an LBP rect needs 'x y w h', got {len(toks)} numbers")
            features.append(tuple(_to_int(t, where) for t in toks))
    return {"type": ftype.lower(), "window": (width, height), "stages": stages, "features": features, "notes": notes}


def _haar_feature(f: ET.Element, where: str) -> tuple[list, bool]:
    """A Haar feature element (both formats): its ``(x, y, w, h, weight)`` rects and tilted flag."""
    rects = []
    for r in _items(_child(f, "rects", where)):
        toks = _numbers(r.text, where)
        if len(toks) != 5:
            _fail(where, f"a rect needs 'x y w h weight', got {len(toks)} numbers")
        rects.append(tuple(_to_int(t, where) for t in toks[:4]) + (_to_float(toks[4], where),))
    tilted = f.find("tilted")
    return rects, tilted is not None and (tilted.text or "0").strip() not in ("0", "")


def _parse_old(node: ET.Element) -> dict:
    toks = _numbers(_child(node, "size", "cascade").text, "size")
    if len(toks) != 2:
        _fail("size", f"expected 'width height', got {len(toks)} numbers")
    width, height = (_to_int(t, "size") for t in toks)
    stages, features = [], []
    for si, st in enumerate(_items(_child(node, "stages", "cascade"))):
        where = f"stage {si}"
        thr = _to_float((_child(st, "stage_threshold", where).text or "").strip(), f"{where} stage_threshold")
        trees = []
        for ti, tree in enumerate(_items(_child(st, "trees", where))):
            tw = f"{where} tree {ti}"
            raw_nodes = _items(tree)
            if not raw_nodes:
                _fail(tw, "a tree needs at least one node")
            nodes, leaves = [], []
            for ni, n in enumerate(raw_nodes):
                nw = f"{tw} node {ni}"
                features.append(_haar_feature(_child(n, "feature", nw), nw))
                node_thr = _to_float((_child(n, "threshold", nw).text or "").strip(), nw)
                children = []
                for side in ("left", "right"):
                    val, idx = n.find(f"{side}_val"), n.find(f"{side}_node")
                    if val is not None:
                        leaves.append(_to_float((val.text or "").strip(), nw))
                        children.append(-(len(leaves) - 1))
                    elif idx is not None:
                        k = _to_int((idx.text or "").strip(), nw)
                        if k <= 0:
                            _fail(nw, f"{side}_node must point to a later node (> 0), got {k}")
                        children.append(k)
                    else:
                        _fail(nw, f"needs <{side}_val> or <{side}_node>")
                nodes.append((children[0], children[1], len(features) - 1, node_thr))
            trees.append((nodes, leaves))
        stages.append((thr, trees))
    return {"type": "haar", "window": (width, height), "stages": stages, "features": features,
            "notes": ["old format (opencv-haar-classifier): every node is its own feature"]}


# --------------------------------------------------------------------------------------------
# Checks and flattening
# --------------------------------------------------------------------------------------------
def _tree_depth(nodes: list, nleaves: int, where: str) -> int:
    """Depth of a tree (1 for a stump); every node reachable once, children in range."""
    seen = set()
    leaves_seen = set()

    def walk(i: int, depth: int) -> int:
        if depth > MAX_TREE_DEPTH:
            _fail(where, f"deeper than {MAX_TREE_DEPTH} nodes")
        if i in seen:
            _fail(where, f"node {i} is reached twice (a cycle or a shared subtree)")
        seen.add(i)
        best = depth
        for c in nodes[i][:2]:
            if c > 0:
                if c >= len(nodes):
                    _fail(where, f"child node {c} out of range (the tree has {len(nodes)} nodes)")
                best = max(best, walk(c, depth + 1))
            else:
                if -c >= nleaves:
                    _fail(where, f"leaf {-c} out of range (the tree has {nleaves} leaves)")
                leaves_seen.add(-c)
        return best

    depth = walk(0, 1)
    if len(seen) != len(nodes):
        _fail(where, f"{len(nodes) - len(seen)} nodes are not reachable from the root")
    return depth


def _fixed_shift(values: np.ndarray) -> int:
    for k in range(MAX_FIXED_SHIFT + 1):
        scaled = values.astype(np.float64) * 2.0**k
        if np.all(scaled == np.floor(scaled)):
            return k
    _fail("leafValues", f"leaf values need more than {MAX_FIXED_SHIFT} fractional bits for an exact fixed-point form")
    raise AssertionError


def _flatten(raw: dict, source: str) -> Cascade:
    ftype = raw["type"]
    width, height = raw["window"]
    if not (1 <= width <= 4096 and 1 <= height <= 4096) or width * height > MAX_WINDOW_AREA:
        _fail("window", f"{width}x{height} is not a supported window (area at most {MAX_WINDOW_AREA})")
    if ftype == "haar" and (width < 3 or height < 3):
        _fail("window", f"Haar windows need at least 3x3 pixels (variance rectangle), got {width}x{height}")
    stages = raw["stages"]
    if not stages:
        _fail("stages", "the cascade has no stages")
    features = raw["features"]
    nfeat = len(features)
    if nfeat == 0:
        _fail("features", "the cascade has no features")

    stage_tree_start, tree_node_start, tree_leaf_start, depths = [0], [0], [0], []
    node_feature, node_left, node_right, node_thr, node_subset, leaves, stage_thr = [], [], [], [], [], [], []
    for si, (thr, trees) in enumerate(stages):
        if not trees:
            _fail(f"stage {si}", "a stage needs at least one tree")
        stage_thr.append(thr)
        for ti, (nodes, lv) in enumerate(trees):
            where = f"stage {si} tree {ti}"
            depths.append(_tree_depth(nodes, len(lv), where))
            for left, right, feat, param in nodes:
                if not 0 <= feat < nfeat:
                    _fail(where, f"feature index {feat} out of range (the cascade has {nfeat} features)")
                node_feature.append(feat)
                node_left.append(left)
                node_right.append(right)
                if ftype == "haar":
                    node_thr.append(param)
                else:
                    node_subset.append(param)
            leaves.extend(lv)
            tree_node_start.append(len(node_feature))
            tree_leaf_start.append(len(leaves))
        stage_tree_start.append(len(depths))
        if len(node_feature) > MAX_ENTRIES:
            _fail("stages", f"more than {MAX_ENTRIES} nodes")

    leaf_value = np.asarray(leaves, np.float32)
    k = _fixed_shift(leaf_value)
    leaf_fixed = (leaf_value.astype(np.float64) * 2.0**k).astype(np.int64)
    # OpenCV sums float32 leaves in double: exact while every partial sum has < 53 bits at 2**-k.
    tree_max = np.array([np.abs(leaf_value[a:b]).max() if b > a else 0.0
                         for a, b in zip(tree_leaf_start[:-1], tree_leaf_start[1:])], np.float64)
    for s in range(len(stages)):
        bound = tree_max[stage_tree_start[s] : stage_tree_start[s + 1]].sum() * 2.0**k
        if bound >= 2.0**52:
            _fail(f"stage {s}", "leaf sums too large for an exact fixed-point form")
    thr32 = np.asarray(stage_thr, np.float32) - STAGE_THRESHOLD_EPS  # float32 subtraction, as OpenCV
    thr_fixed = np.ceil(thr32.astype(np.float64) * 2.0**k)
    if np.any(np.abs(thr_fixed) >= 2.0**62):
        _fail("stageThreshold", "stage threshold too large")

    n_nodes = len(node_feature)
    if ftype == "haar":
        rect = np.zeros((nfeat, 3, 4), np.int32)
        weight = np.zeros((nfeat, 3), np.int32)
        tilted = np.zeros(nfeat, bool)
        for fi, (rects, tl) in enumerate(features):
            where = f"feature {fi}"
            if not 1 <= len(rects) <= 3:
                _fail(where, f"a Haar feature needs 1 to 3 rects, got {len(rects)}")
            bound = 0
            for ri, (x, y, w, h, wt) in enumerate(rects):
                if wt != math.floor(wt) or abs(wt) > 2**16:
                    _fail(where, f"weight {wt} is not a small integer; portcv's exact evaluation needs integer "
                                 "weights (the shipped OpenCV cascades have -1, 2, 3)")
                if w < 0 or h < 0:
                    _fail(where, f"negative rect size {w}x{h}")
                if tl:
                    ok = x - h >= 0 and x + w <= width and y >= 0 and y + w + h <= height
                else:
                    ok = x >= 0 and y >= 0 and x + w <= width and y + h <= height
                if not ok:
                    _fail(where, f"rect {(x, y, w, h)} (tilted={tl}) leaves the {width}x{height} window")
                rect[fi, ri] = (x, y, w, h)
                weight[fi, ri] = int(wt)
                bound += abs(int(wt)) * 255 * (w * h if not tl else 2 * w * h)
            if bound**2 >= 2**53:
                _fail(where, "weights too large for an exact evaluation")
            tilted[fi] = tl
        node_threshold = np.asarray(node_thr, np.float32)
        node_threshold_sq = node_threshold.astype(np.float64) ** 2
        subset = np.zeros((0, 8), np.uint32)
    else:
        rect = np.zeros((nfeat, 4), np.int32)
        for fi, (x, y, w, h) in enumerate(features):
            if w < 1 or h < 1 or x < 0 or y < 0 or x + 3 * w > width or y + 3 * h > height:
                _fail(f"feature {fi}", f"LBP rect {(x, y, w, h)} (3x3 blocks) leaves the {width}x{height} window")
            rect[fi] = (x, y, w, h)
        weight = np.zeros((0, 3), np.int32)
        tilted = np.zeros(0, bool)
        node_threshold = np.zeros(0, np.float32)
        node_threshold_sq = np.zeros(0, np.float64)
        subset = np.asarray(node_subset, np.uint64).astype(np.uint32).reshape(n_nodes, 8)

    def c(a: Any, dt: Any) -> np.ndarray:
        out = np.ascontiguousarray(np.asarray(a, dt))
        out.flags.writeable = False
        return out

    return Cascade(
        feature_type=ftype,
        window=(int(width), int(height)),
        has_tilted=bool(tilted.any()),
        stage_tree_start=c(stage_tree_start, np.int32),
        stage_threshold=c(thr32, np.float32),
        stage_threshold_fixed=c(thr_fixed, np.int64),
        tree_node_start=c(tree_node_start, np.int32),
        tree_leaf_start=c(tree_leaf_start, np.int32),
        node_feature=c(node_feature, np.int32),
        node_left=c(node_left, np.int32),
        node_right=c(node_right, np.int32),
        node_threshold=c(node_threshold, np.float32),
        node_threshold_sq=c(node_threshold_sq, np.float64),
        node_subset=c(subset, np.uint32),
        leaf_value=c(leaf_value, np.float32),
        leaf_fixed=c(leaf_fixed, np.int64),
        feature_rect=c(rect, np.int32),
        feature_weight=c(weight, np.int32),
        feature_tilted=c(tilted, bool),
        fixed_shift=int(k),
        tree_depth=c(depths, np.int32),
        source=source,
        notes=tuple(raw["notes"]),
    )


def read_cascade(path: str) -> Cascade:
    """Read and parse the cascade file at ``path``."""
    return parse_cascade(_read_bytes(path), source=str(path))
