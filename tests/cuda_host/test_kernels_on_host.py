"""portcv's CUDA kernels built for the host and run without a GPU, against NumPy.

The CuPy launchers run unchanged with a NumPy stand-in for ``cupy`` and ``cuda_function``
pointing at the same ``.cu`` sources compiled by g++ with ``cuda_host.h`` (every thread of a
block is a real thread, ``__syncthreads`` a real barrier, each warp's shuffles an exchange). The
GPU suite (``tools/gpu_check.sh``) is the proof on the card; this checks the kernels' integer
arithmetic and indexing on every CI run, where there is no GPU. Kernels covered: the B-spline
zoom (``_zoom_cuda.cu``), DCBF's hole list and hole filling (``_bilateral_cuda.cu``), the
propagation's projections, z-buffer and gather (``_propagate_cuda.cu``) and the 3-D
convolution's padding and sums and its FFT methods' input, spectral sum and rounding
(``_convolve3d_cuda.cu``).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import portcv

from ..depth.test_propagate import scenes

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src" / "portcv"
#: A device id no GPU has, so the launchers' per-device caches never mix host and GPU arrays.
HOST_DEVICE = -1


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("needs g++ (C++20) to build the CUDA sources for the host")
    out = tmp_path_factory.mktemp("cuda_host") / "kernels.so"
    cmd = [compiler, "-O1", "-std=c++20", "-shared", "-fPIC", f"-I{SRC / 'backends'}", "-o", str(out),
           str(HERE / "kernels.cpp"), "-lpthread"]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]  # a kernel that does not build is a failure
    return ctypes.CDLL(str(out))


def _c_argument(value):
    if isinstance(value, np.ndarray):
        return ctypes.c_void_p(value.ctypes.data)
    value = np.asarray(value)
    types_ = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
              np.dtype(np.uint64): ctypes.c_uint64}
    assert value.dtype in types_, f"kernel argument of type {value.dtype}"
    return types_[value.dtype](value.item())


def _symbol(name_expression: str) -> tuple[str, list]:
    """``portcv_spline_zoom_tiles<unsigned char,4,true>`` -> ``zoom_tiles_uchar_4_true``."""
    base, _, params = name_expression.partition("<")
    base = re.sub(r"^portcv_(spline_|bilateral_)?", "", base)
    params = [p.strip().replace("unsigned char", "uchar").replace("unsigned short", "ushort")
              for p in params.rstrip(">").split(",") if p.strip()]
    return "_".join([base, *params]), []


@pytest.fixture
def host_cupy(library, monkeypatch):
    """The CuPy launchers, running the host-built kernels on NumPy arrays."""
    fake = types.ModuleType("cupy")
    for name in ("uint8", "uint16", "int32", "int64", "uint64"):
        setattr(fake, name, getattr(np, name))
    fake.asarray = lambda a, dtype=None: np.array(a, dtype=dtype)
    fake.ascontiguousarray = np.ascontiguousarray
    fake.empty, fake.zeros, fake.full = np.empty, np.zeros, np.full
    for name in ("float64", "complex128"):
        setattr(fake, name, getattr(np, name))
    # cuFFT's stand-in: NumPy's FFT, its results C-contiguous as the kernels read them.
    fake.fft = types.SimpleNamespace(**{name: (lambda fn: lambda *a, **k: np.ascontiguousarray(fn(*a, **k)))(
        getattr(np.fft, name)) for name in ("rfftn", "irfftn", "rfft2", "irfft2", "ifft")})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    import portcv.backends.cupy as cupy_backend

    def cuda_function(module: str, name_expression: str):
        symbol, leading = _symbol(name_expression)
        fn = getattr(library, symbol)

        def launch(grid, block, args, shared_mem=0):
            assert shared_mem <= 48 * 1024, f"{name_expression} asks for {shared_mem} bytes of shared memory"
            dims = [ctypes.c_uint(int(v)) for v in (tuple(grid) + (1, 1))[:3] + (tuple(block) + (1, 1))[:3]]
            fn(*leading, *dims, *map(_c_argument, args))

        return launch

    monkeypatch.setattr(cupy_backend, "cuda_function", cuda_function)
    monkeypatch.setattr(cupy_backend, "device_constant", lambda values, dtype="int32": np.asarray(values, dtype))
    monkeypatch.setattr(cupy_backend, "current_device_id", lambda: HOST_DEVICE)
    monkeypatch.setattr(cupy_backend, "sm_count", lambda: 2)
    # Few blocks: each host block starts hundreds of threads; the kernels stride over the rest.
    monkeypatch.setattr(cupy_backend, "launch_1d", lambda n, block=256: ((max(1, min(-(-n // block), 3)),), (block,)))
    return fake


def _compare_through(kernel, monkeypatch, calls):
    """While the test runs, NumPy's ``kernel`` computes both NumPy's result and the host-built
    CUDA one (the CuPy launcher on NumPy arrays) and fails where they differ."""
    from portcv._kernel import Override

    numpy_fn = kernel.overrides["numpy"].fn if "numpy" in kernel.overrides else None
    on_gpu = kernel.overrides["cupy"].fn

    def both(*arrays, **params):
        want = numpy_fn(*arrays, **params) if numpy_fn else kernel.portable(np, *arrays, **params)
        got = on_gpu(*arrays, **params)
        assert got is not NotImplemented, (kernel.name, params)
        pairs = zip(want, got) if isinstance(want, tuple) else [(want, got)]
        for w, g in pairs:
            assert (w is None) == (g is None), kernel.name
            if w is not None:
                assert w.dtype == g.dtype and np.array_equal(w, g), (kernel.name, params)
        calls.append(kernel.name)
        return want

    monkeypatch.setitem(kernel.overrides, "numpy", Override(both, "tests"))


def _zoom_cases(rng, count):
    for i in range(count):
        h, w = int(rng.integers(1, 40)), int(rng.integers(1, 45))
        shape = [h, w]
        channels = bool(rng.integers(0, 2))
        if channels:
            shape.append(int(rng.choice([1, 2, 3, 5])))
        if rng.integers(0, 2):
            shape.insert(0, int(rng.integers(1, 4)))
        sizes = [(int(rng.integers(1, 90)), int(rng.integers(1, 90))), (h * 7, w * 7), (max(1, h // 3), w * 2)]
        yield i, rng.integers(0, 256, shape, dtype=np.uint8), channels, sizes


def test_zoom_kernels_equal_numpy(host_cupy):
    """The fused prefilter (tiles inside and across the frame, 1-13 channels) and the fused
    interpolation (orders 0, 1, 3; exact and rounded weights, the 32- and 64-bit final division;
    channels; batches; int32 coefficients at both ends) give NumPy's bits, and a 300x shrink
    (tiles one output row high)."""
    from portcv.transform import _zoom

    prefilter = _zoom.spline_prefilter_kernel.overrides
    interpolate = _zoom.spline_zoom_kernel.overrides

    def same(kind, img, **params):
        got = kind["cupy"].fn(img, **params)
        assert got is not NotImplemented, params
        want = kind["numpy"].fn(img, **params)
        assert got.dtype == want.dtype and np.array_equal(got, want), (img.shape, params, np.argwhere(got != want)[:5])

    rng = np.random.default_rng(2026)
    for i, img, channels, sizes in _zoom_cases(rng, 8):
        same(prefilter, img, has_channels=channels)
        coef = prefilter["numpy"].fn(img, has_channels=channels)
        if i % 3 == 0:
            coef = rng.integers(-(2**31), 2**31, img.shape, dtype=np.int64).astype(np.int32)
        for order in (0, 1, 3):
            for size in sizes:
                same(interpolate, img, order=order, size=size, has_channels=channels, frac_bits=0)
                same(interpolate, coef, order=order, size=size, has_channels=channels, frac_bits=16)
    for shape, channels in (((150, 200), False), ((70, 90, 3), True), ((2, 20, 30, 13), True)):
        same(prefilter, rng.integers(0, 256, shape, dtype=np.uint8), has_channels=channels)
    assert prefilter["cupy"].fn(np.zeros((9, 9, 22), np.uint8), has_channels=True) is NotImplemented
    tall = rng.integers(0, 256, (1200, 7), dtype=np.uint8)
    same(interpolate, prefilter["numpy"].fn(tall, has_channels=False), order=3, size=(4, 5), has_channels=False,
         frac_bits=16)


def test_dcbf_hole_kernels_equal_numpy(host_cupy, monkeypatch):
    """DCBF's hole list and warp-per-hole filling (uint8/uint16 depth, grey/RGB guides, both
    norms, square and disk windows, any hole value) give NumPy's bits: every call ``dcbf``
    makes of the joint bilateral kernel runs both."""
    from portcv import _bilateral

    checked = []
    _compare_through(_bilateral.bilateral_kernel, monkeypatch, checked)
    rng = np.random.default_rng(27)
    for i in range(10):
        h, w = int(rng.integers(1, 24)), int(rng.integers(1, 24))
        dtype = (np.uint8, np.uint16)[i % 2]
        depth = rng.integers(0, 4 if i % 3 == 0 else 300 if dtype == np.uint16 else 256, (h, w)).astype(dtype)
        color = rng.integers(0, 256, (h, w, 3) if rng.integers(0, 2) else (h, w), dtype=np.uint8)
        with portcv.using("numpy"):
            portcv.depth.dcbf(depth, color, ksize=int(rng.choice([3, 5, 11])), sigma_color=float(rng.choice([5, 20])),
                              window=str(rng.choice(["square", "disk"])), color_norm=str(rng.choice(["l1", "l2"])),
                              unknown=int(rng.choice([0, 1, 2])))
    # A batch larger than the hole list's grid (64 blocks of 2,048 pixels here): blocks take
    # several chunks, scattered holes put several in most warps.
    depth = rng.integers(1, 256, (3, 200, 240), dtype=np.uint8)
    depth[rng.random(depth.shape) < 0.01] = 0
    color = rng.integers(0, 256, (3, 200, 240, 3), dtype=np.uint8)
    with portcv.using("numpy"):
        portcv.depth.dcbf(depth, color, ksize=5)
    assert checked == ["joint_bilateral"] * 11


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), seed=st.integers(0, 99))
def test_propagation_kernels_equal_numpy(host_cupy, monkeypatch, data, seed):
    """The projections (depth and disparity), the atomicMin z-buffer and the gather (depth and
    colour) give NumPy's bits on the depth-propagation tests' scenes: holes, ties in depth, many
    sources per target pixel."""
    from portcv.depth import _propagate

    calls = []
    for kernel in (_propagate.project_kernel, _propagate.disparity_project_kernel, _propagate.zbuffer_kernel,
                   _propagate.gather_kernel):
        _compare_through(kernel, monkeypatch, calls)
    depth, K_src, K_dst, R, t, dst_shape = data.draw(scenes())
    rng = np.random.default_rng(seed)
    color = rng.integers(0, 256, depth.shape + (3,), dtype=np.uint8)
    with portcv.using("numpy"):
        portcv.depth.propagate_color(depth, color, K_src, K_dst, R, t, dst_shape, fill=7)
        disparity = rng.integers(0, 17, depth.shape).astype(depth.dtype)
        portcv.depth.warp_disparity(disparity, direction=int(rng.choice([-1, 1])), frac_bits=2, color=color[..., 0])
    assert sorted(set(calls)) == ["depth_project", "disparity_project", "zbuffer_gather", "zbuffer_min"]


def test_convolve3d_kernel_equals_numpy(host_cupy, monkeypatch):
    """The direct 3-D convolution kernel (float and int accumulators; uint8, uint16 and int16
    video; odd kernel sides 1-11 and both pixel runs per thread, banks of kernels, batches, fewer
    output frames than a thread's run; every border, made by the padding kernel, including frames,
    rows and columns shorter than the kernel's reach and time_mode 'same'; the pad's word path)
    gives NumPy's bits."""
    from portcv.volume import _convolve3d

    checked = []
    _compare_through(_convolve3d.convolve3d_direct_kernel, monkeypatch, checked)
    rng = np.random.default_rng(31)
    borders = ("reflect101", "replicate", "constant")
    for i in range(18):
        kt, kh, kw = (int(rng.choice([1, 3, 5])), int(rng.choice([1, 3, 5])), int(rng.choice([1, 3, 5, 7, 11])))
        time_mode = ("valid", "same")[i % 2]
        border = borders[(i // 2) % 3]
        t = (kt if time_mode == "valid" else 1) + int(rng.integers(0, 7))
        h, w = int(rng.integers(1, 14)), int(rng.integers(1, 150))
        dtype = (np.uint8, np.uint16, np.int16)[i % 3]
        info = np.iinfo(dtype)
        video = rng.integers(info.min, int(info.max) + 1, ((2,) if i % 4 == 0 else ()) + (t, h, w)).astype(dtype)
        # Small taps keep the float accumulator exact (below 2**24); large ones take the int path.
        largest = max(-int(info.min), int(info.max))
        reach = 3 if i % 3 == 0 else max(1, min(2000, (2**31 - 1) // largest // (kt * kh * kw)))
        kernel = rng.integers(-reach, reach + 1, ((2,) if i % 5 == 0 else ()) + (kt, kh, kw))
        value = int(rng.integers(info.min, int(info.max) + 1))
        with portcv.using("numpy"):
            portcv.volume.convolve3d(video, kernel, method="direct", out_dtype="int32", border=border,
                                     border_value=value, time_mode=time_mode, channel_axis=None)
    # The pad's word path at each byte shift (kernel widths 3, 5, 7, 9 over rows of whole words),
    # rows of more than 32 and 64 pieces (two pieces a lane, a lane's second pass), a row with no
    # piece (int16, 10 wide) and constant rows wider than a warp's 32 pieces.
    for dtype, w, kw, border in ((np.uint8, 44, 3, "reflect101"), (np.uint8, 1104, 7, "replicate"),
                                 (np.uint8, 600, 9, "reflect101"), (np.uint16, 200, 3, "constant"),
                                 (np.int16, 10, 3, "replicate"), (np.uint8, 530, 5, "constant")):
        info = np.iinfo(dtype)
        video = rng.integers(info.min, int(info.max) + 1, (3, 2, w)).astype(dtype)
        with portcv.using("numpy"):
            portcv.volume.convolve3d(video, rng.integers(-3, 4, (3, 3, kw)), method="direct", out_dtype="int32",
                                     border=border, border_value=7, time_mode="same", channel_axis=None)
    assert checked == ["convolve3d_direct"] * 24


def test_convolve3d_fft_method_kernels_equal_numpy(host_cupy, monkeypatch):
    """The FFT methods' kernels around the transforms (NumPy's FFT standing in for cuFFT): the
    padded float64 input (every border, time_mode 'same', uint8, uint16 and int16), the hybrid
    method's sum along time (banks of kernels, batches, output frames not a multiple of a
    thread's run) and the rounding of the kept part, both ways of inverting the 3-D transform;
    NumPy's bits."""
    from portcv.volume import _convolve3d, _convolve3d_cuda

    checked = []
    _compare_through(_convolve3d.convolve3d_fft_kernel, monkeypatch, checked)
    _compare_through(_convolve3d.convolve3d_hybrid_kernel, monkeypatch, checked)
    rng = np.random.default_rng(37)
    borders = ("reflect101", "replicate", "constant")
    for i in range(12):
        kt, kh, kw = (int(rng.choice([1, 3, 5])) for _ in range(3))
        time_mode = ("valid", "same")[i % 2]
        border = borders[(i // 2) % 3]
        t = (kt if time_mode == "valid" else 1) + int(rng.integers(0, 9))
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        dtype = (np.uint8, np.uint16, np.int16)[i % 3]
        info = np.iinfo(dtype)
        video = rng.integers(info.min, int(info.max) + 1, ((2,) if i % 4 == 0 else ()) + (t, h, w)).astype(dtype)
        kernel = rng.integers(-5, 6, ((2,) if i % 5 == 0 else ()) + (kt, kh, kw))
        value = int(rng.integers(info.min, int(info.max) + 1))
        monkeypatch.setattr(_convolve3d_cuda, "_inverts_kept_frames", lambda t_out, t2, i=i: i % 3 != 1)
        for method in ("fft", "hybrid"):
            with portcv.using("numpy"):
                portcv.volume.convolve3d(video, kernel, method=method, out_dtype="int32", border=border,
                                         border_value=value, time_mode=time_mode, channel_axis=None)
    assert sorted(set(checked)) == ["convolve3d_fft", "convolve3d_hybrid"] and len(checked) == 24
