"""The per-file core without a cluster: specs, decoding with seeks, segments, the worker plugin."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import numpy as np
import pytest

import portcv

pytest.importorskip("dask", reason="dask not installed (pip install 'portcv[distributed]')")
av = pytest.importorskip("av", reason="PyAV not installed (pip install 'portcv[io]')")

import portcv.distributed as pdist  # noqa: E402

from .clips import SPEC, same_value, write_clip  # noqa: E402


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return write_clip(tmp_path_factory.mktemp("v") / "gop5.mp4", portcv.data.moving_shapes(23, 48, 64, seed=2), gop=5)


def test_specs_are_small_picklable_and_checked_early():
    spec = pdist.motion(t_low=70, t_high=80, grid=[2, 3])
    assert isinstance(spec, pdist.MotionSpec) and pickle.loads(pickle.dumps(spec)) == spec
    assert len(pickle.dumps(spec)) < 400
    faces = pdist.faces("haarcascade_frontalface_alt.xml", min_neighbors=4)
    assert isinstance(faces, pdist.FacesSpec) and pickle.loads(pickle.dumps(faces)) == faces
    with pytest.raises(ValueError, match="grid"):
        pdist.motion(t_low=70, t_high=80, grid=(0, 3))


def test_seeked_segments_decode_the_same_frames(clip):
    times, keys = pdist.frame_table(clip)
    assert len(times) == 23 and keys == [0, 5, 10, 15, 20]
    whole = list(pdist._videos.decode(clip))
    for start, stop in [(5, 10), (10, 23), (15, 17)]:
        part = list(pdist._videos.decode(clip, start, stop))
        assert len(part) == stop - start
        assert all(np.array_equal(a, b) for a, b in zip(part, whole[start:stop]))


def test_decode_is_portcv_videos_reader(clip):
    """One PyAV decoder in the project: the distributed tasks' frames, colour included, are the
    serial reader's (OpenCV's BT.601 conversion of the decoded planes), with and without a table."""
    serial = portcv.video.read_video(clip, device="cpu")
    with portcv.using("jax" if portcv.backends.get("jax").is_available() else "numpy"):
        whole = list(pdist._videos.decode(clip))  # host frames whatever backend is active
    assert all(isinstance(f, np.ndarray) for f in whole)
    np.testing.assert_array_equal(np.stack(whole), serial)
    table = pdist.frame_table(clip)
    np.testing.assert_array_equal(np.stack(list(pdist._videos.decode(clip, 10, 15, table=table))), serial[10:15])
    assert list(pdist._videos.decode(clip, 7, 7)) == []  # process_video's empty range
    cv2 = pytest.importorskip("cv2")
    with av.open(clip) as container:
        planes = [f.to_ndarray() for f in container.decode(video=0)]
    np.testing.assert_array_equal(serial, np.stack([cv2.cvtColor(p, cv2.COLOR_YUV2RGB_I420) for p in planes]))


def test_process_video_segments_join_into_the_whole_file(clip):
    whole = pdist.process_video(clip, SPEC, backend="numpy")
    assert whole["regions"].shape == (22, 3, 4) and whole["regions"].any()
    bounds = pdist.segment_bounds(clip, 6)
    assert bounds == [(0, 10), (10, 20), (20, 23)]
    parts = [pdist.process_video(clip, SPEC, backend="numpy", start=s, stop=e) for s, e in bounds]
    assert same_value(pdist.MotionSpec.merge(parts), whole)
    # the result equals the motion detector fed by portcv.video's own reader
    detector = portcv.motion.MotionDetector(t_low=70, t_high=80, beta=2, grid=(3, 4))
    with portcv.using("numpy"):
        ref = [detector.update(f) for f in portcv.video.iter_frames(clip)][1:]
    assert np.array_equal(np.stack([portcv.to_numpy(r.regions) for r in ref]), whole["regions"])


def test_faces_segments_carry_global_frame_indices(clip):
    pytest.importorskip("cv2")
    spec = pdist.faces(min_neighbors=1, min_size=(8, 8))
    whole = pdist.process_video(clip, spec, backend="numpy")
    assert [i for i, _, _ in whole] == list(range(23))
    parts = [pdist.process_video(clip, spec, start=s, stop=e) for s, e in pdist.segment_bounds(clip, 6)]
    assert same_value(pdist.FacesSpec.merge(parts), whole)
    # the boxes equal the cascade detector's on portcv.video's own reader
    detector = spec.detector()
    with portcv.using("numpy"):
        serial = [(k, *detector.detect(f, **dict(spec.params)))
                  for k, f in enumerate(portcv.video.iter_frames(clip, device="cpu"))]
    assert same_value([(k, portcv.to_numpy(b), portcv.to_numpy(n)) for k, b, n in serial], whole)


def test_faces_spec_with_an_mct_cascade_runs_the_mct_detector(clip):
    spec = pdist.faces("mct_frontalface_24.npz", min_neighbors=1)
    assert isinstance(spec.detector(), portcv.detect.MCTDetector)
    got = pdist.process_video(clip, spec, backend="numpy", stop=3)
    detector = portcv.detect.MCTDetector.default()
    with portcv.using("numpy"):
        want = [detector.detect(portcv.color.rgb_to_gray(f), min_neighbors=1)[0]
                for f in list(portcv.video.iter_frames(clip))[:3]]
    assert [i for i, _, _ in got] == [0, 1, 2]
    assert all(np.array_equal(portcv.to_numpy(b), portcv.to_numpy(w)) for (_, b, _), w in zip(got, want))


def test_serial_map_videos_keeps_errors_and_runs_any_callable(clip, tmp_path):
    def frame_count(frames, backend):
        return sum(1 for _ in frames)

    runs = list(pdist.map_videos(frame_count, [clip, str(tmp_path / "nope.mp4")], client=None, progress=False))
    assert isinstance(runs[0], pdist.VideoRun) and runs[0].value == 23 and runs[0].error is None
    assert runs[1].error.startswith("VideoError") and runs[1].value is None
    saved = list(pdist.map_videos(SPEC, [clip, clip], client=None, out=tmp_path / "res", progress=False))
    assert sorted(Path(r.value).name for r in saved) == ["gop5-2.npz", "gop5.npz"]
    seg = list(pdist.map_videos(SPEC, [clip], client=None, segment_frames=6, progress=False))[0]
    assert seg.segments == 3 and seg.frames == 23
    for segment_frames in (6, 100):  # three segments, and one (the file is shorter than a segment)
        kept = list(pdist.map_videos(SPEC, [clip], client=None, segment_frames=segment_frames,
                                     out=tmp_path / f"seg{segment_frames}", progress=False))[0]
        assert Path(kept.value).is_file() and same_value(dict(np.load(kept.value)), seg.value)
    with pytest.raises(ValueError, match="segment_frames needs"):
        list(pdist.map_videos(frame_count, [clip], segment_frames=6, progress=False))
    with pytest.raises(ValueError, match="errors"):
        list(pdist.map_videos(SPEC, [clip], errors="ignore", progress=False))
    with pytest.raises(RuntimeError, match="nope.mp4"):
        list(pdist.map_videos(SPEC, [str(tmp_path / "nope.mp4")], errors="raise", progress=False))


def test_portcv_worker_sets_the_process_backend():
    pytest.importorskip("distributed")
    plugin = pdist.PortcvWorker("numpy")
    assert repr(plugin) == "PortcvWorker('numpy')" and pickle.loads(pickle.dumps(plugin)).backend == "numpy"
    from distributed import WorkerPlugin

    assert isinstance(plugin, WorkerPlugin)
    before = portcv.backend().name
    try:
        plugin.setup()
        assert pdist.worker_backend() == "numpy"
    finally:
        portcv.use(before)


def test_gpu_cluster_needs_gpus_and_rotates_devices(monkeypatch):
    pytest.importorskip("distributed")
    from portcv.distributed import _cluster

    assert _cluster._rotated(["0", "1", "2"], 1) == "1,2,0"
    assert _cluster._rotated(["0", "0"], 1) == "0"  # two workers on one GPU: plumbing only
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(_cluster.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs GPUs"):
        pdist.local_cluster("cupy")


@pytest.mark.timeout(300)
def test_two_gpu_workers_on_one_gpu_equal_numpy(clip):
    """Plumbing on one GPU (devices='0,0'): pinning, the plugin, CuPy results equal NumPy's."""
    try:
        portcv.backends.get("cupy")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(f"CuPy/GPU unavailable: {exc}")
    from distributed import Client

    expected = pdist.process_video(clip, SPEC, backend="numpy")
    with pdist.local_cluster("cupy", devices="0,0", dashboard_address=None) as cluster, \
            Client(cluster, timeout="60s") as client:
        assert set(client.run(pdist.worker_backend).values()) == {"cupy"}
        runs = list(pdist.map_videos(SPEC, [clip, clip], client=client, segment_frames=6, progress=False,
                                     timeout=120))
    assert all(r.error is None and same_value(r.value, expected) for r in runs)


# --------------------------------------------------------------------------------------------
# Bad arguments fail in the call, with the argument named
# --------------------------------------------------------------------------------------------
def test_map_videos_takes_a_single_path_as_one_file(clip):
    runs = list(pdist.map_videos(SPEC, clip, progress=False))
    assert [r.path for r in runs] == [clip] and runs[0].error is None and runs[0].frames == 23
    runs = list(pdist.map_videos(SPEC, Path(clip), segment_frames=6, progress=False))
    assert len(runs) == 1 and runs[0].segments == 3


@pytest.mark.parametrize("kw,exc,match", [
    ({"spec": None}, TypeError, "spec"),
    ({"spec": "motion"}, TypeError, "spec"),
    ({"backend": "bogus"}, ValueError, "backend"),
    ({"timeout": 0}, ValueError, "timeout"),
    ({"timeout": "10"}, TypeError, "timeout"),
    ({"progress": "no"}, TypeError, "progress"),
    ({"segment_frames": 2.5}, TypeError, "segment_frames"),
    ({"segment_frames": 1}, ValueError, "segment_frames"),
    ({"paths": 7}, TypeError, "paths"),
    ({"paths": ["a.mp4", None]}, TypeError, "paths"),
    ({"out": 3}, TypeError, "out"),
    ({"errors": "ignore"}, ValueError, "errors"),
    ({"decoder": "nvdec"}, ValueError, "decoder"),
    ({"decoder": None}, ValueError, "decoder"),
    ({"sessions": 0}, ValueError, "sessions"),
    ({"sessions": 65}, ValueError, "sessions"),
    ({"sessions": 2.0}, TypeError, "sessions"),
])
def test_map_videos_refuses_bad_arguments_in_the_call(clip, kw, exc, match):
    args = {"spec": SPEC, "paths": [clip], **kw}
    with pytest.raises(exc, match=match):  # no iteration: the call itself raises, before any work
        pdist.map_videos(args.pop("spec"), args.pop("paths"), progress=args.pop("progress", False), **args)


class _Paced:
    """A picklable callable spec that counts frames slowly (a long file, in short)."""

    def __call__(self, frames, backend=None):
        count = 0
        for _ in frames:
            time.sleep(0.02)
            count += 1
        return count


def test_a_serial_run_honours_its_timeout(clip):
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match="0 of 4 files done when timeout=0.15 s"):
        list(pdist.map_videos(_Paced(), [clip] * 4, progress=False, timeout=0.15))
    assert time.perf_counter() - t0 < 5  # the 4 files take 2 s: it stopped between frames
    assert [r.value for r in pdist.map_videos(_Paced(), [clip], progress=False, timeout=60)] == [23]


@pytest.mark.parametrize("kw,exc,match", [
    ({"start": -1}, ValueError, "start"),
    ({"start": 5, "stop": 3}, ValueError, "start must be <= stop"),
    ({"stop": 2.5}, TypeError, "stop"),
    ({"start": True}, TypeError, "start"),
    ({"stop": -2}, ValueError, "stop"),
    ({"backend": "bogus"}, ValueError, "backend"),
    ({"spec": None}, TypeError, "spec"),
    ({"decoder": "GPU"}, ValueError, "decoder"),
])
def test_process_video_refuses_bad_ranges_and_specs(clip, kw, exc, match):
    spec = kw.pop("spec", SPEC)
    with pytest.raises(exc, match=match):
        pdist.process_video(clip, spec, **kw)


def test_process_video_past_the_end_names_the_file(clip):
    with pytest.raises(portcv.video.VideoError, match="gop5.mp4.*from frame 40: it has 23 frames"):
        pdist.process_video(clip, SPEC, start=40)


@pytest.mark.parametrize("segment_frames,exc", [(0, ValueError), (-1, ValueError), (1, ValueError),
                                                (2.0, TypeError), ("6", TypeError), (None, TypeError)])
def test_segment_bounds_refuses_degenerate_segments(clip, segment_frames, exc):
    with pytest.raises(exc, match="segment_frames"):
        pdist.segment_bounds(clip, segment_frames)


def test_frame_table_wraps_pyav_errors_naming_the_file(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)
    with pytest.raises(portcv.video.VideoError, match="junk.mp4"):
        pdist.frame_table(junk)
    with pytest.raises(portcv.video.VideoError, match="nope.mp4.*no such file"):
        pdist.frame_table(tmp_path / "nope.mp4")
    with pytest.raises(TypeError, match="path"):
        pdist.frame_table(None)


@pytest.mark.parametrize("params,exc,match", [
    ({"t_low": "70", "t_high": 80}, TypeError, "t_low"),
    ({"t_low": 70, "t_high": None}, TypeError, "t_high"),
    ({"t_low": 70, "t_high": 80, "alpha": -1}, ValueError, "alpha"),
    ({"t_low": 70, "t_high": 80, "ksize": 4}, ValueError, "ksize"),
    ({"t_low": 70, "t_high": 80, "ksize": 0, "sigma": float("nan")}, ValueError, "sigma"),
    ({"t_low": 70, "t_high": 80, "gird": (2, 2)}, TypeError, "gird"),
])
def test_motion_spec_checks_every_parameter_at_construction(params, exc, match):
    with pytest.raises(exc, match=match):
        pdist.motion(**params)


@pytest.mark.parametrize("args,params,exc,match", [
    (("mct_frontalface_24.npz",), {"min_neighbors": -1}, ValueError, "min_neighbors"),
    (("mct_frontalface_24.npz",), {"scale_factor": 0.9}, ValueError, "scale_factor"),
    (("mct_frontalface_24.npz",), {"step": 0}, ValueError, "step"),
    (("mct_frontalface_24.npz",), {"min_neigbors": 3}, TypeError, "min_neigbors"),
    (("no_such_cascade.xml",), {}, FileNotFoundError, "no_such_cascade"),
    ((None,), {}, TypeError, "cascade"),
])
def test_faces_spec_checks_its_cascade_and_parameters_at_construction(args, params, exc, match):
    with pytest.raises(exc, match=match):
        pdist.faces(*args, **params)


# --------------------------------------------------------------------------------------------
# Clusters: bad arguments fail in the caller (no cluster is started)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,exc,match", [
    ({"backend": "bogus"}, ValueError, "backend.*bogus"),
    ({"backend": None}, TypeError, "backend"),
    ({"n_workers": 0}, ValueError, "n_workers"),
    ({"n_workers": -1}, ValueError, "n_workers"),
    ({"n_workers": 1.5}, TypeError, "n_workers"),
    ({"threads_per_worker": 0}, ValueError, "threads_per_worker"),
    ({"devices": "abc"}, ValueError, "devices"),
    ({"devices": ""}, ValueError, "devices"),
    ({"devices": [0.5]}, TypeError, "devices"),
    ({"backend": "cupy", "processes": False}, ValueError, "processes"),
    ({"processes": False, "env": {"A": "1"}}, ValueError, "env"),
    ({"processes": "no"}, TypeError, "processes"),
])
@pytest.mark.timeout(120)  # were a check to go, a cluster would start: bounded
def test_local_cluster_refuses_bad_arguments_before_starting(kw, exc, match):
    pytest.importorskip("distributed")
    with pytest.raises(exc, match=match):
        pdist.local_cluster(**kw)


def test_portcv_worker_refuses_an_unknown_backend_at_construction():
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="backend.*bogus"):
        pdist.PortcvWorker("bogus")
    with pytest.raises(TypeError, match="warmup"):
        pdist.PortcvWorker("numpy", warmup="yes")


def test_the_examples_leave_no_temporary_files_behind(tmp_path, monkeypatch):
    """Every docstring example of portcv.distributed that makes temporary files removes them."""
    import doctest
    import tempfile

    from portcv.distributed import _cluster, _ops, _tiles, _videos

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    ran = []
    for module in (_cluster, _ops, _tiles, _videos):
        for test in doctest.DocTestFinder().find(module):
            if "tempfile" in "".join(example.source for example in test.examples):
                ran.append(test.name)
                assert runner.run(test).failed == 0, test.name
    assert len(ran) >= 3  # filter_store, process_video, segment_bounds
    assert list(scratch.iterdir()) == [], "an example left temporary files behind"


def test_sessions_run_files_at_once_with_the_same_results(clip, tmp_path):
    """Several files at once in threads (one decoder session each) give each file's own result,
    in completion order, with the decoder that ran named; segments too."""
    other = write_clip(tmp_path / "other.mp4", portcv.data.moving_shapes(17, 48, 64, seed=9), gop=4)
    paths = [clip, other, clip, other, clip]
    one = {r.path: r for r in pdist.map_videos(SPEC, paths[:2], progress=False)}
    for segment_frames in (None, 6):
        runs = list(pdist.map_videos(SPEC, paths, progress=False, sessions=3, segment_frames=segment_frames))
        assert sorted(map(str, (r.path for r in runs))) == sorted(map(str, paths))
        for r in runs:
            assert r.error is None and r.decoder == "cpu" and same_value(r.value, one[r.path].value)
    assert all(r.decoder == "cpu" for r in one.values())


def test_sessions_keep_the_active_backend_and_errors_per_file(clip, tmp_path):
    seen = []

    def backend_of(frames, backend):
        seen.append(portcv.backends.backend().name)
        return sum(1 for _ in frames)

    jax_or_numpy = "jax" if portcv.backends.get("jax").is_available() else "numpy"
    with portcv.using(jax_or_numpy):
        runs = list(pdist.map_videos(backend_of, [clip, str(tmp_path / "nope.mp4"), clip], progress=False,
                                     sessions=2))
    assert sorted(r.value for r in runs if r.error is None) == [23, 23]
    assert [r.error.split(":")[0] for r in runs if r.error] == ["VideoError"]
    assert seen == [jax_or_numpy] * 2  # the threads ran in the caller's context


def test_a_serial_run_with_sessions_honours_its_timeout(clip):
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match="when timeout=0.15 s"):
        list(pdist.map_videos(_Paced(), [clip] * 6, progress=False, timeout=0.15, sessions=3))
    assert time.perf_counter() - t0 < 5  # the running files stopped between frames


def test_sessions_are_for_runs_without_a_cluster(clip):
    class FakeClient:  # never used: the call refuses before any work
        def map(self, *args, **kwargs):
            raise AssertionError("no task may be sent")

        submit = map

    with pytest.raises(ValueError, match="threads_per_worker"):
        pdist.map_videos(SPEC, [clip], client=FakeClient(), sessions=2, progress=False)


def test_the_decoder_choice_reaches_the_reader(clip, monkeypatch):
    """decoder= is the reader's device: "gpu" on a host backend is refused per file, naming the
    fix; "cpu" and "auto" on NumPy decode on the CPU."""
    run = next(pdist.map_videos(SPEC, [clip], progress=False, decoder="gpu"))
    assert run.error.startswith("ValueError") and "device='gpu'" in run.error and run.decoder is None
    for decoder in ("cpu", "auto"):
        assert next(pdist.map_videos(SPEC, [clip], progress=False, decoder=decoder)).decoder == "cpu"
