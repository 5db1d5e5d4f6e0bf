"""chi_square / nearest: the fixed-point definition, its error bound against exact and float64
chi-square, rankings, constructed ties, the p-way split, every backend equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import recognize
from portcv.recognize._chi_square import chi_square_kernel, frac_bits

from ..helpers import assert_same_bits, on_backend
from ..oracles import chi2 as oracle


@st.composite
def histogram_sets(draw, max_rows=6, max_regions=5, max_bins=8, dtypes=("uint8", "uint16", "int32")):
    """(queries (m, regions, bins), gallery (n, regions, bins), weights (regions,), max_count)."""
    dtype = draw(st.sampled_from(dtypes))
    max_count = draw(st.sampled_from([3, 255] if dtype == "uint8" else [3, 255, 378, 1000, 32767]))
    m, n = draw(st.integers(1, max_rows)), draw(st.integers(1, max_rows))
    regions, bins = draw(st.integers(1, max_regions)), draw(st.integers(1, max_bins))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    high = draw(st.sampled_from([2, max_count + 1]))
    Q = rng.integers(0, high, (m, regions, bins)).astype(dtype)
    G = rng.integers(0, high, (n, regions, bins)).astype(dtype)
    if draw(st.booleans()):  # duplicates: ties
        G[rng.integers(0, n, n // 2 + 1)] = G[0]
    weights = rng.integers(0, draw(st.sampled_from([2, 5, 256])), regions)
    return Q, G, weights, max_count


@given(hs=histogram_sets())
def test_equals_the_per_term_floor_definition_and_its_bound(hs):
    Q, G, w, n = hs
    D, F = recognize.chi_square(Q, G, weights=w, max_count=n)
    assert F == min(20, 30 - n.bit_length()) and D.dtype == np.int64 and D.shape == (len(Q), len(G))
    for a in range(len(Q)):
        for b in range(len(G)):
            assert int(D[a, b]) == oracle.fixed_point(Q[a], G[b], w, F)
            exact = oracle.exact(Q[a], G[b], w)
            nonempty = ((Q[a].astype(int) + G[b]) > 0).sum(axis=1)
            bound = sum(int(wj) * int(bj) for wj, bj in zip(w, nonempty))
            err = exact * 2**F - int(D[a, b])  # in units of 2**-F
            assert 0 <= err and (err < bound or (bound == 0 and err == 0))


@given(hs=histogram_sets(max_rows=12, max_regions=6, max_bins=10), data=st.data())
def test_nearest_equals_the_naive_loop_with_ties_to_the_smaller_index(hs, data):
    Q, G, w, n = hs
    k = data.draw(st.integers(1, len(G)))
    idx, D = recognize.nearest(Q, G, k=k, weights=w, max_count=n)
    F = frac_bits(n)
    for a in range(len(Q)):
        ref_i, ref_d = oracle.nearest(Q[a], G, w, F, k)
        assert idx[a].tolist() == ref_i and D[a].tolist() == ref_d
    assert idx.dtype == np.int32 and D.dtype == np.int64


@given(hs=histogram_sets(max_rows=8), data=st.data())
def test_same_bits_on_every_backend(backend, hs, data):
    Q, G, w, n = hs
    k = data.draw(st.integers(1, len(G)))
    for fn, kwargs in ((recognize.chi_square, {}), (recognize.nearest, {"k": k})):
        expected = on_backend("numpy", fn, Q, G, weights=w, max_count=n, **kwargs)
        actual = on_backend(backend, fn, Q, G, weights=w, max_count=n, **kwargs)
        if fn is recognize.chi_square:
            assert expected[1] == actual[1]
            expected, actual = expected[:1], actual[:1]
        for e, a in zip(expected, actual, strict=True):
            assert portcv.backends.get(backend).owns(a)
            assert_same_bits(e, a)


def _kernel_on(backend, Q, G, w, max_count):
    """The chi-square kernel itself (no count check) on ``backend``, its D as NumPy."""
    params = dict(frac_bits=frac_bits(max_count), parts=max(1, min(8, Q.shape[1])), max_count=max_count)
    with portcv.using(backend):
        D = chi_square_kernel(portcv.asarray(Q), portcv.asarray(G), portcv.asarray(np.asarray(w, np.int64)), **params)
        assert portcv.backend().owns(D)
        return portcv.to_numpy(D)


@given(data=st.data())
def test_the_kernel_gives_the_portable_bits_for_counts_above_max_count(backend, data):
    """Outside the definition (counts above max_count, where the portable int32 terms wrap), which
    chi_square and nearest refuse, the kernel itself still returns the portable version's bits on
    every backend (the CUDA kernel repeats its int32 steps there)."""
    dtype = data.draw(st.sampled_from(["uint8", "uint16", "int32"]))
    high = {"uint8": 256, "uint16": 65536, "int32": 2**20}[dtype]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    m, n = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 20))
    regions, bins = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 130))  # CUDA: 1 to 8 bins per lane
    Q = rng.integers(0, high, (m, regions, bins)).astype(dtype)
    G = rng.integers(0, high, (n, regions, bins)).astype(dtype)
    G[:, :, ::3] = rng.integers(0, 4, G[:, :, ::3].shape)  # some in-range pairs beside the large ones
    w = rng.integers(0, 256, regions)
    max_count = data.draw(st.sampled_from([3, 255, 1000, 4095]))  # CUDA: the small-count path and the other
    assert_same_bits(_kernel_on("numpy", Q, G, w, max_count), _kernel_on(backend, Q, G, w, max_count))


#: Counts outside [0, max_count] (issue 53): (query, gallery, max_count, the argument named, the message).
OUT_OF_RANGE = {
    "uint16 above an explicit max_count": (np.array([[3000, 0]], np.uint16), np.array([[[0, 3000]]], np.uint16), 255,
                                           "query", "count of 3000, above max_count=255.*pass max_count=3000"),
    "int32 above the fixed point": (np.array([[70000, 0]], np.int32), np.array([[[0, 70000]]], np.int32), None,
                                    "query", "count of 70000.*counts up to 32767"),
    "uint16 above the default": (np.array([[1, 0]], np.uint16), np.array([[[0, 40000]]], np.uint16), None,
                                 "gallery", "count of 40000.*counts up to 32767"),
    "int32 above an explicit max_count": (np.array([[1, 0]], np.int32), np.array([[[0, 300]]], np.int32), 255,
                                "gallery", "count of 300, above max_count=255"),
    "negative int32": (np.array([[-3, 5]], np.int32), np.array([[[1, 5]]], np.int32), None,
                       "query", "negative count"),
    "negative int32 in the gallery": (np.array([[3, 5]], np.int32), np.array([[[1, 5]], [[2, -1]]], np.int32), 255,
                                      "gallery", "negative count"),
    "uint8 query above a small max_count": (np.array([[200, 0]], np.uint8), np.array([[[0, 3]]], np.uint8), 3,
                                            "query", "count of 200, above max_count=3"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_counts_outside_max_count_are_refused_on_every_backend(backend, case):
    """Before, these gave wrapped distances (-2192 for the first, where 6000 is exact) and the
    1-NN picked one: every backend now refuses them, naming the argument and the fix."""
    Q, G, max_count, name, message = OUT_OF_RANGE[case]
    for fn in (recognize.chi_square, recognize.nearest):
        with pytest.raises(ValueError, match=f"^{name} holds a .*{message}"):
            on_backend(backend, fn, Q, G, max_count=max_count)


def test_counts_at_the_bound_are_exact_and_the_default_covers_uint16_counts():
    """The bound itself is in the domain: 3000 with max_count=3000, and uint16/int32 counts up to
    32,767 with the default max_count, give the exact distance (6000 for the issue's pair)."""
    S, M = np.array([[3000, 0]], np.uint16), np.array([[[0, 3000]]], np.uint16)
    D, F = recognize.chi_square(S, M, max_count=3000)
    assert D.tolist() == [6000 << F]
    D, F = recognize.chi_square(S.astype(np.int32), M.astype(np.int32))
    assert F == 15 and D.tolist() == [6000 << 15]
    idx, D = recognize.nearest(S, np.concatenate([M, S[None]]), max_count=3000)
    assert idx.tolist() == [1] and D.tolist() == [0]


def test_one_region_face_histograms_need_their_region_size_as_max_count():
    """Real LBP histograms of one region of 1,140 pixels with max_count=255: before, 173 of 240
    distances of such a set were wrapped; now refused, and with the region's pixel count as
    max_count every distance equals the Python-integer definition."""
    faces = np.random.default_rng(5).integers(0, 256, (4, 34, 42), dtype=np.uint8)
    H = portcv.to_numpy(recognize.lbp_histograms(faces, region_size=(38, 30)))  # (4, 1, 1, 59), counts up to 1140
    assert H.shape == (4, 1, 1, 59) and H.max() > 255
    with pytest.raises(ValueError, match="above max_count=255.*pass max_count="):
        recognize.chi_square(H, H, max_count=255)
    D, F = recognize.chi_square(H, H, max_count=38 * 30)
    for a in range(4):
        for b in range(4):
            assert int(D[a, b]) == oracle.fixed_point(H[a].reshape(1, 59), H[b].reshape(1, 59), [1], F)


def test_the_count_check_inside_a_users_jax_jit_is_a_clear_error():
    """Inside a trace the counts are unknown: a TypeError that says so (not JAX's tracer error);
    uint8 histograms with max_count >= 255 need no check and run."""
    jax = pytest.importorskip("jax")
    try:
        portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    G = np.array([[[1, 2]], [[2, 1]]], np.uint16)
    with portcv.using("jax"):
        with pytest.raises(TypeError, match="query and gallery: .*outside jax.jit"):
            jax.jit(lambda g: recognize.chi_square(g[0], g)[0])(portcv.asarray(G))
        inside = jax.jit(lambda g: recognize.chi_square(g[0], g)[0])(portcv.asarray(G.astype(np.uint8)))
    direct = recognize.chi_square(G[0].astype(np.uint8), G.astype(np.uint8))[0]
    assert portcv.to_numpy(inside).tolist() == direct.tolist()


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("bins", [59, 100, 243])
def test_same_bits_on_every_backend_for_a_gallery_of_face_sized_histograms(backend, k, bins):
    """Many gallery rows (several CUDA blocks), 9 queries (a full group of 8 and one more),
    59-, 100- and 243-bin regions ((8, 2) and (16, 2) u2 among them: rows that do not split into
    whole warps, and the CUDA kernel's 2, 4 and 8 bins per lane), repeated rows (ties)."""
    rng = np.random.default_rng(22)
    G = rng.integers(0, 379, (300, 7, bins)).astype(np.uint16)
    G[150:160] = G[20]
    Q = np.concatenate([G[[20, 3]], rng.integers(0, 379, (7, 7, bins)).astype(np.uint16)])
    w = recognize.AHONEN_WEIGHTS_7X7[1]  # one row of Ahonen's weights: 0 to 4
    for fn, kwargs in ((recognize.chi_square, {}), (recognize.nearest, {"k": k})):
        expected = on_backend("numpy", fn, Q, G, weights=w, max_count=378, **kwargs)
        actual = on_backend(backend, fn, Q, G, weights=w, max_count=378, **kwargs)
        if fn is recognize.chi_square:
            assert expected[1] == actual[1]
            expected, actual = expected[:1], actual[:1]
        for e, a in zip(expected, actual, strict=True):
            assert_same_bits(e, a)


@given(hs=histogram_sets(max_rows=5, max_regions=9), parts=st.integers(1, 9))
def test_any_split_into_parts_gives_the_same_distance(hs, parts):
    """The thesis's p-way split: integer partial sums, so D does not depend on p."""
    Q, G, w, n = hs
    xp = portcv.backends.get("numpy").xp
    W = np.asarray(w, np.int64)
    ref = chi_square_kernel.portable(xp, Q, G, W, frac_bits=frac_bits(n), parts=1, max_count=n)
    np.testing.assert_array_equal(chi_square_kernel.portable(xp, Q, G, W, frac_bits=frac_bits(n), parts=parts, max_count=n), ref)


@given(hs=histogram_sets(max_rows=5, max_regions=6, max_bins=12), step=st.integers(1, 40), force_float=st.booleans())
def test_numpy_override_equals_the_portable_version(hs, step, force_float):
    """The NumPy override (a table of T for small counts, float64 division otherwise, in
    steps of gallery rows) gives the portable int32 bits."""
    import portcv.recognize._chi_square as module

    Q, G, w, n = hs
    W = np.asarray(w, np.int64)
    params = dict(frac_bits=frac_bits(n), parts=3, max_count=n)
    expected = chi_square_kernel.portable(portcv.backends.get("numpy").xp, Q, G, W, **params)
    saved = module.NUMPY_STEP, module.TABLE_ENTRIES
    module.NUMPY_STEP, module.TABLE_ENTRIES = step * Q.shape[1] * Q.shape[2], (0 if force_float else saved[1])
    try:
        with portcv.using("numpy"):
            actual = chi_square_kernel.overrides["numpy"].fn(Q, G, W, **params)
    finally:
        module.NUMPY_STEP, module.TABLE_ENTRIES = saved
    assert_same_bits(expected, actual)


@pytest.mark.parametrize("max_count", [255, 1023, 4095])
def test_numpy_override_gives_the_portable_bits_for_negative_counts(max_count):
    """int32 histograms may hold negative numbers, outside the definition like counts above
    max_count: the NumPy override then runs the portable int32 steps too (its table and its
    float64 division assume counts in [0, max_count])."""
    rng = np.random.default_rng(max_count)
    Q = np.array([[[-3, 5]]], np.int32)
    G = np.array([[[1, 5]]], np.int32)
    cases = [(Q, G), (G, Q)]
    for _ in range(20):
        Q = rng.integers(-40, max_count + 1, (3, 2, 7)).astype(np.int32)
        G = rng.integers(0, max_count + 1, (5, 2, 7)).astype(np.int32)
        G[rng.integers(0, 5), rng.integers(0, 2), rng.integers(0, 7)] = -rng.integers(1, 1000)
        cases += [(Q, G), (G[:3], Q)]
    W = np.array([3, 1], np.int64)
    for Q, G in cases:
        W1 = W[: Q.shape[1]]
        params = dict(frac_bits=frac_bits(max_count), parts=1, max_count=max_count)
        expected = chi_square_kernel.portable(portcv.backends.get("numpy").xp, Q, G, W1, **params)
        with portcv.using("numpy"):
            actual = chi_square_kernel.overrides["numpy"].fn(Q, G, W1, **params)
        assert_same_bits(expected, actual)


def test_numpy_override_terms_at_every_count():
    """Each term of both NumPy paths equals the Python-integer floor: the table for every
    (S, M) up to 378, the float64 division for S, M at both ends of [0, 32767] and on a grid."""
    from portcv.recognize._chi_square import float_terms, term_table

    s = np.arange(379, dtype=np.int64)
    exact = ((s[:, None] - s[None, :]) ** 2 << 20) // np.maximum(s[:, None] + s[None, :], 1)
    np.testing.assert_array_equal(term_table(378, 20).reshape(379, 379), exact)
    for n in (378, 1023, 4095, 32767):
        F = frac_bits(n)
        v = np.unique(np.r_[0:300, n - 300:n + 1, np.linspace(0, n, 400).astype(np.int64)])
        S, M = np.meshgrid(v, v, indexing="ij")
        want = np.array([[((a - b) ** 2 << F) // max(a + b, 1) for b in v.tolist()] for a in v.tolist()])
        np.testing.assert_array_equal(float_terms(S.astype(np.float64), M.astype(np.float64), F).astype(np.int64), want)


def test_the_cuda_float64_term_is_exact_for_every_count_up_to_1023():
    """The CUDA kernel's term for counts up to 1023 (``portcv_chi_square_small`` in
    ``_recognizer_cuda.cu``), replayed with the same IEEE float64 operations on all 1024**2 pairs:
    ``y = fl(a * fl(2**20 / b))``, T = the low word of ``fl(fl(y + 2**-12 - 1/2) + 1.5 * 2**52)``
    equals ``floor(a * 2**20 / b)`` (``fl(2**20 / 0)`` is taken as 0: T(0, 0) = 0)."""
    s = np.arange(1024, dtype=np.int64)
    S, M = np.meshgrid(s, s, indexing="ij")
    b, a = S + M, (S - M) ** 2
    rcp = np.zeros(2047)
    rcp[1:] = 1048576.0 / np.arange(1, 2047, dtype=np.float64)  # correctly rounded, as __ddiv_rn
    y = a.astype(np.float64) * rcp[b]
    z = (y + (2.0 ** -12 - 0.5)) + 1.5 * 2.0 ** 52
    low_word = (z.view(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.int64)
    np.testing.assert_array_equal(low_word, (a << 20) // np.maximum(b, 1))
    assert np.all(z.view(np.uint64) >> np.uint64(32) == np.uint64(0x43380000))  # T fits the low word


def test_float64_reference_bound_and_ranking_on_face_like_histograms():
    """Real LBP histograms of (random-textured) 130 x 150 faces, 7 x 7 (8, 2)^u2, Ahonen's
    weights: |float64 chi2 - D 2**-F| within the bound; the 1-NN equals float64's argmin
    whenever float64's best two are farther apart than the bound."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (6, 150, 130), dtype=np.uint8)
    faces = np.concatenate([base, np.clip(base.astype(int) + rng.integers(-20, 21, base.shape), 0, 255).astype(np.uint8)])
    H = portcv.to_numpy(recognize.lbp_histograms(faces))  # (12, 7, 7, 59) uint16
    w = recognize.AHONEN_WEIGHTS_7X7
    D, F = recognize.chi_square(H, H, weights=w, max_count=18 * 21)
    assert F == 20
    S = H.reshape(12, 1, 49, 59).astype(np.float64)
    M = H.reshape(1, 12, 49, 59).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(S + M > 0, (S - M) ** 2 / (S + M), 0.0)
    ref = (t.sum(-1) * w.reshape(-1)).sum(-1)
    bound = 2.0**-F * ((S + M > 0).sum(-1) * w.reshape(-1)).sum(-1)
    err = ref - D * 2.0**-F
    assert (err > -1e-9).all() and (err < bound + 1e-9).all()
    assert bound.max() < 56 * 59 * 2.0**-20
    idx, _ = recognize.nearest(H, H[::-1].copy(), weights=w, max_count=18 * 21)
    fl = ref[:, ::-1]
    order = np.argsort(fl, axis=1, kind="stable")
    gap = np.take_along_axis(fl, order[:, 1:2], 1) - np.take_along_axis(fl, order[:, :1], 1)
    clear = gap[:, 0] > bound.max()
    np.testing.assert_array_equal(idx[clear, 0], order[clear, 0])


def test_extreme_histograms_do_not_overflow():
    n = 32767
    a = np.zeros((1, 49, 243), np.uint16)
    b = np.zeros((2, 49, 243), np.uint16)
    a[..., 0] = n
    b[0, :, 1] = n
    b[1, :, 0] = n
    D, F = recognize.chi_square(a, b, weights=np.full(49, 255), max_count=n)
    assert F == 15
    # each region: n**2/n + n**2/n = 2n exactly: D = 255 * 49 * 2n * 2**F
    assert D.tolist() == [[255 * 49 * 2 * n * 2**F, 0]]


def test_constructed_ties_go_to_the_smaller_index(backend):
    rng = np.random.default_rng(0)
    G = rng.integers(0, 50, (40, 4, 9)).astype(np.uint16)
    G[[5, 17, 33]] = G[29]  # four identical rows
    q = G[29].copy()
    idx, D = on_backend(backend, recognize.nearest, q, G, k=4)
    assert portcv.to_numpy(idx).tolist() == [5, 17, 29, 33]
    assert portcv.to_numpy(D).tolist() == [0, 0, 0, 0]


def test_ahonen_weights():
    w = recognize.AHONEN_WEIGHTS_7X7
    assert w.shape == (7, 7) and int(w.sum()) == 56 and set(np.unique(w).tolist()) == {0, 1, 2, 4}
    assert not w.flags.writeable


def test_bad_input():
    G = np.zeros((3, 4, 5), np.uint16)
    with pytest.raises(TypeError, match="query"):
        recognize.chi_square(np.zeros((4, 5), np.float32), G)
    with pytest.raises(TypeError, match="gallery"):
        recognize.nearest(np.zeros((4, 5), np.uint16), "faces")
    with pytest.raises(ValueError, match="mismatched histogram lengths"):
        recognize.chi_square(np.zeros((4, 6), np.uint16), G)
    with pytest.raises(ValueError, match="mismatched histogram lengths"):
        recognize.nearest(np.zeros((2, 3, 5), np.uint16), G)
    with pytest.raises(ValueError, match="gallery"):
        recognize.nearest(np.zeros((4, 5), np.uint16), np.zeros((0, 4, 5), np.uint16))
    with pytest.raises(ValueError, match="weights"):
        recognize.chi_square(np.zeros((4, 5), np.uint16), G, weights=[1, 2, 3])
    with pytest.raises(ValueError, match="weights"):
        recognize.chi_square(np.zeros((4, 5), np.uint16), G, weights=[1, 2, 3, 256])
    with pytest.raises(TypeError, match="weights"):
        recognize.chi_square(np.zeros((4, 5), np.uint16), G, weights=[1.5, 2, 3, 4])
    with pytest.raises(ValueError, match="k"):
        recognize.nearest(np.zeros((4, 5), np.uint16), G, k=4)
    with pytest.raises(ValueError, match="max_count"):
        recognize.chi_square(np.zeros((4, 5), np.uint16), G, max_count=40000)
    with pytest.raises(ValueError, match="weights must be a rectangular array"):
        recognize.chi_square(np.zeros((4, 5), np.uint16), G, weights=[[1, 2], [3]])
    many = np.broadcast_to(np.zeros((1, 1), np.uint8), (50_000, 1))  # 2.5e9 distances: 20 GB of int64
    with pytest.raises(ValueError, match="distance matrix would have more than .*nearest"):
        recognize.chi_square(many, many)


def _jax_on_device(monkeypatch):
    """The JAX backend with ``runs_on_host`` off (its GPU formulation, wherever JAX runs) and no
    host callback allowed; skips without JAX."""
    pytest.importorskip("jax")
    import portcv.backends.jax as jax_backend

    try:
        b = portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    monkeypatch.setattr(jax_backend.JaxBackend, "runs_on_host", property(lambda self: False))

    def no_host_call(*args, **kwargs):
        raise AssertionError("a host callback ran with runs_on_host off")

    monkeypatch.setattr(jax_backend, "host_call", no_host_call)
    return b


def test_jax_quotient_terms_are_exact_at_every_count(monkeypatch):
    """JAX's term (one float64 division and a margin, compiled as in its program) equals the
    Python-integer floor for every (S, M) up to 1023 and, for larger bounds, at both ends of
    [0, n] and on a grid."""
    from portcv.recognize._chi_square import quotient_terms

    b = _jax_on_device(monkeypatch)
    cases = [(1023, np.arange(1024))]
    for n in (378, 4095, 32767):
        cases.append((n, np.unique(np.r_[0:200, n - 200:n + 1, np.linspace(0, n, 300).astype(np.int64)])))
    for n, v in cases:
        F = frac_bits(n)
        S, M = (a.astype(np.int64) for a in np.meshgrid(v, v, indexing="ij"))
        want = ((S - M) ** 2 << F) // np.maximum(S + M, 1)
        terms = b.jit(lambda s, m, F=F, n=n: quotient_terms(b.xp, s, m, frac_bits=F, max_count=n))
        got = portcv.to_numpy(terms(b.asarray(S.astype(np.int32)), b.asarray(M.astype(np.int32))))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)


def test_the_quotient_margin_absorbs_a_division_some_ulps_off():
    """Where a GPU's float64 division is not correctly rounded (a reciprocal times x), the
    quotient may be a few ulps off; XLA:CPU divides exactly, so the compiled test above cannot
    see that. Replayed here with quotients moved 4 ulps down and up: the margin gives the exact
    floor, and without it some exact quotients computed low would floor one below."""
    from portcv.recognize._chi_square import quotient_margin

    for n in (255, 378, 1023, 4095, 32767):
        F = frac_bits(n)
        v = np.unique(np.r_[0:300, n - 300:n + 1, np.linspace(0, n, 300).astype(np.int64)])
        S, M = (a.astype(np.int64) for a in np.meshgrid(v, v, indexing="ij"))
        want = ((S - M) ** 2 << F) // np.maximum(S + M, 1)
        q = ((S - M) ** 2 * float(1 << F)) / np.maximum(S + M, 1).astype(np.float64)
        low, high = q.copy(), q.copy()
        for _ in range(4):
            low, high = np.nextafter(low, -np.inf), np.nextafter(high, np.inf)
        for off in (low, high):
            np.testing.assert_array_equal(np.floor(off + quotient_margin(n)).astype(np.int64), want)
        assert np.any(np.floor(low).astype(np.int64) != want)  # the margin is needed


@given(hs=histogram_sets(max_rows=8), data=st.data())
def test_jax_device_formulation_equals_numpy_on_the_cpu(hs, data):
    """JAX on the CPU hands chi_square to the NumPy version (a host callback), so the
    every-backend tests compare NumPy with NumPy there; with ``runs_on_host`` off it runs the
    program a GPU runs: the float64 quotients, or (in the kernel, which the public functions
    guard) the portable steps when a count is outside [0, max_count] (some drawn here)."""
    with pytest.MonkeyPatch.context() as mp:
        _jax_on_device(mp)
        Q, G, w, n = hs
        k = data.draw(st.integers(1, len(G)))
        for fn, kwargs in ((recognize.chi_square, {}), (recognize.nearest, {"k": k})):
            expected = on_backend("numpy", fn, Q, G, weights=w, max_count=n, **kwargs)
            actual = on_backend("jax", fn, Q, G, weights=w, max_count=n, **kwargs)
            for e, a in zip(expected, actual, strict=True):
                assert_same_bits(e, a)
        if data.draw(st.booleans()) and Q.dtype != np.uint8:
            G = G.copy()
            value = data.draw(st.sampled_from([n + 1, 4 * n + 3] + ([-1, -n] if G.dtype == np.int32 else [])))
            G.flat[data.draw(st.integers(0, G.size - 1))] = min(value, np.iinfo(G.dtype).max)  # negative: int32 only
            assert_same_bits(_kernel_on("numpy", Q, G, w, n), _kernel_on("jax", Q, G, w, n))
