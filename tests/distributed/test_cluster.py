"""A real ``dask.distributed`` cluster: 2 worker processes of 1 thread, real video files (PyAV).

One cluster serves the module (its start is 2-5 s on 2 cores). Every wait is bounded: the client
connects within 30 s, every gather within 120 s, every test within 300 s (pytest-timeout). No
timing is asserted: results are compared, bit for bit, with serial runs in this process.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

import portcv

pytest.importorskip("distributed", reason="dask.distributed not installed (pip install 'portcv[distributed]')")
av = pytest.importorskip("av", reason="PyAV not installed (pip install 'portcv[io]')")
from distributed import Client  # noqa: E402

import portcv.distributed as pdist  # noqa: E402

from .clips import SPEC, same_value, write_clip  # noqa: E402

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(300)]

GATHER = 120  # seconds


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clips")
    return [write_clip(folder / f"clip{i}.mp4", portcv.data.moving_shapes(10 + 2 * i, 64, 96, seed=i))
            for i in range(6)]


@pytest.fixture(scope="module")
def long_clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long")
    return [write_clip(folder / f"long{i}.mp4", portcv.data.moving_shapes(30, 48, 64, seed=10 + i), gop=6)
            for i in range(2)]


def _scratch(folder):
    """Dask's scratch space (scheduler and worker folders, lock files) in ``folder``, not /tmp."""
    import dask

    return dask.config.set({"temporary-directory": str(folder)})


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with _scratch(tmp_path_factory.mktemp("dask")):
        cluster = pdist.local_cluster("numpy", n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, memory_limit="2GiB")
    with cluster, Client(cluster, timeout="30s") as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def serial(spec, paths, **kw):
    return {r.path: r for r in pdist.map_videos(spec, paths, client=None, progress=False, **kw)}


def test_workers_run_the_plugin_backend(client):
    assert set(client.run(pdist.worker_backend).values()) == {"numpy"}
    assert len(client.scheduler_info()["workers"]) == 2
    # distributed's MALLOC_TRIM_THRESHOLD_=65536 makes NumPy kernels 4-10x slower: not in portcv's workers
    assert set(client.run(os.getenv, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
    cores = os.cpu_count() or 1
    assert set(client.run(os.getenv, "PORTCV_NUMPY_THREADS").values()) == {str(max(1, cores // 2))}


def test_map_videos_equals_serial(client, clips):
    expected = serial(SPEC, clips)
    runs = list(pdist.map_videos(SPEC, clips, client=client, progress=False, timeout=GATHER))
    assert sorted(r.path for r in runs) == sorted(clips)
    assert any(expected[p].value["regions"].any() for p in clips)
    for run in runs:
        assert run.error is None
        assert run.frames == expected[run.path].frames > 0
        assert same_value(run.value, expected[run.path].value)


def test_faces_spec_on_the_cluster_equals_serial(client, clips):
    pytest.importorskip("cv2", reason="the cascade XML files come with opencv")
    spec = pdist.faces(min_neighbors=2, min_size=(8, 8))
    expected = serial(spec, clips[:2])
    runs = list(pdist.map_videos(spec, clips[:2], client=client, progress=False, timeout=GATHER))
    for run in runs:
        assert run.error is None and len(run.value) == expected[run.path].frames
        assert same_value(run.value, expected[run.path].value)


def test_segments_equal_whole_files(client, long_clips):
    times, keys = pdist.frame_table(long_clips[0])
    assert len(times) == 30 and keys[:3] == [0, 6, 12]
    expected = serial(SPEC, long_clips)
    runs = list(pdist.map_videos(SPEC, long_clips, client=client, segment_frames=7, progress=False, timeout=GATHER))
    for run in runs:
        assert run.error is None and run.segments >= 3
        assert run.frames == 30
        assert same_value(run.value, expected[run.path].value)
    faces = pdist.faces(min_neighbors=1, min_size=(8, 8))
    pytest.importorskip("cv2")
    whole = serial(faces, long_clips[:1])[long_clips[0]].value
    parts = list(pdist.map_videos(faces, long_clips[:1], client=client, segment_frames=10, progress=False,
                                  timeout=GATHER))
    assert parts[0].segments >= 2 and same_value(parts[0].value, whole)


def test_a_corrupt_or_missing_file_fails_alone(client, clips, tmp_path):
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(2000))
    missing = str(tmp_path / "missing.mp4")
    paths = [clips[0], str(corrupt), missing, clips[1]]
    runs = {r.path: r for r in pdist.map_videos(SPEC, paths, client=client, progress=False, timeout=GATHER)}
    assert runs[str(corrupt)].error and runs[str(corrupt)].value is None
    assert "missing.mp4" in runs[missing].error
    expected = serial(SPEC, clips[:2])
    for p in clips[:2]:
        assert runs[p].error is None and same_value(runs[p].value, expected[p].value)
    with pytest.raises(RuntimeError, match="corrupt.mp4"):
        list(pdist.map_videos(SPEC, [str(corrupt)], client=client, errors="raise", progress=False, timeout=GATHER))
    segmented = {r.path: r for r in pdist.map_videos(SPEC, [str(corrupt), clips[2]], client=client, segment_frames=4,
                                                     progress=False, timeout=GATHER)}
    assert segmented[str(corrupt)].error and segmented[clips[2]].error is None


def test_out_folder_gets_one_file_per_video(client, clips, long_clips, tmp_path):
    runs = list(pdist.map_videos(SPEC, clips[:2] + long_clips[:1], client=client, out=tmp_path, progress=False,
                                 timeout=GATHER))
    expected = serial(SPEC, clips[:2] + long_clips[:1])
    for run in runs:
        with np.load(run.value) as saved:
            assert same_value(dict(saved), expected[run.path].value)
    seg = list(pdist.map_videos(SPEC, long_clips[:1], client=client, out=tmp_path / "seg", segment_frames=7,
                                progress=False, timeout=GATHER))
    with np.load(seg[0].value) as saved:
        assert same_value(dict(saved), expected[long_clips[0]].value)


class _SlowMotion:
    """A picklable callable spec: motion with a pause per frame, so a worker can die mid-file."""

    def __call__(self, frames, backend=None):
        def paced():
            for frame in frames:
                time.sleep(0.03)
                yield frame

        return SPEC(paced(), backend)


@pytest.mark.slow
def test_killing_a_worker_mid_run_gives_identical_results(client, clips):
    spec = _SlowMotion()
    paths = clips * 2
    expected = serial(SPEC, clips)
    runs = pdist.map_videos(spec, paths, client=client, progress=False, timeout=GATHER)
    first = next(runs)  # every task is submitted now
    busy = [w for w, keys in client.processing().items() if keys]
    assert busy, "no worker is busy: nothing to kill"
    try:
        client.run(os._exit, 1, workers=busy[:1], wait=False)
    except Exception:  # noqa: BLE001 - the worker dies under the call
        pass
    rest = [first, *runs]
    assert len(rest) == len(paths)
    for run in rest:
        assert run.error is None
        assert same_value(run.value, expected[run.path].value)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, with the plugin


def test_filter_store_on_the_cluster_equals_one_call(client, tmp_path):
    zarr = pytest.importorskip("zarr")
    img = portcv.data.synthetic_rgb(1500, 1024, seed=3)[..., 0]
    src = zarr.create_array(str(tmp_path / "in.zarr"), shape=img.shape, chunks=(256, 256), dtype="uint8")
    src[:] = img
    chain = [("filters.gaussian_blur", {"ksize": 7, "sigma": 0}), ("filters.sobel", {"dx": 1, "dy": 0})]
    out = pdist.filter_store(str(tmp_path / "in.zarr"), str(tmp_path / "out.zarr"), chain, tile=512,
                             client=client, timeout=GATHER)
    with portcv.using("numpy"):
        whole = portcv.to_numpy(portcv.filters.sobel(portcv.filters.gaussian_blur(img, ksize=7, sigma=0), 1, 0))
    assert out.dtype == whole.dtype and np.array_equal(out[:], whole)


def test_filter_image_computes_on_the_cluster(client):
    import dask.array as da

    img = portcv.data.synthetic_rgb(200, 150, seed=4)
    lazy = pdist.filter_image(da.from_array(img, chunks=(64, 64, 3)), [("color.rgb_to_gray", {}),
                                                                     ("edges.detect", {"t_low": 40, "t_high": 80})])
    got = client.compute(lazy).result(timeout=GATHER)
    with portcv.using("numpy"):
        whole = portcv.to_numpy(portcv.edges.detect(portcv.color.rgb_to_gray(img), 40, 80))
    assert np.array_equal(got, whole)


def test_cli_motion_and_faces_run_on_the_cluster(client, clips, tmp_path, capsys):
    from portcv.cli import main

    address = client.scheduler.address
    args = ["--t-low", "70", "--t-high", "80", "--beta", "2", "--grid", "3x4", "--no-progress"]
    assert main(["motion", "--cluster", address, *args, *clips[:3]]) == 0
    out = capsys.readouterr().out
    expected = serial(SPEC, clips[:3])
    for p in clips[:3]:
        moving = int(expected[p].value["regions"].reshape(expected[p].frames - 1, -1).any(axis=1).sum())
        assert f"{p}: {expected[p].frames} frames" in out and f"motion in {moving} of" in out
    assert "3 of 3 files done" in out
    missing = str(tmp_path / "none.mp4")
    assert main(["motion", "--cluster", address, *args, "--out", str(tmp_path / "res"), clips[0], missing]) == 1
    captured = capsys.readouterr()
    assert f"{missing}: error" in captured.out and (tmp_path / "res" / "clip0.npz").is_file()
    pytest.importorskip("cv2")
    assert main(["faces", "--cluster", address, "--min-size", "8", "--no-progress", clips[0]]) == 0
    assert "detections in" in capsys.readouterr().out


def test_cli_refuses_several_sources_without_a_cluster(capsys, clips):
    from portcv.cli import main

    assert main(["motion", clips[0], clips[1]]) == 2
    assert "--cluster" in capsys.readouterr().err
    assert main(["faces", "--segment-frames", "5", clips[0]]) == 2
    assert "--segment-frames needs --cluster" in capsys.readouterr().err


def test_cli_cluster_local_starts_and_closes_its_own_cluster(clips, capsys, tmp_path):
    from portcv.cli import main

    with _scratch(tmp_path):
        assert main(["motion", "--cluster", "local", "--beta", "2", "--grid", "3x4", "--no-progress", clips[0]]) == 0
    assert "1 of 1 files done on local" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["deleted", "larger-shape", "corrupted"])
def test_filter_store_on_the_cluster_refuses_a_damaged_store_and_keeps_nothing(client, tmp_path, damage):
    """A damaged source fails on a worker as the StoreError a serial run gives (not fill values, not
    a bare TimeoutError), and the run's temporary output is gone once every task has stopped."""
    zarr = pytest.importorskip("zarr")
    src = tmp_path / "in.zarr"
    array = zarr.create_array(str(src), shape=(256, 256), chunks=(64, 64), dtype="uint8")
    array[:] = portcv.data.synthetic_rgb(256, 256, seed=5)[..., 0]
    old = zarr.create_array(str(tmp_path / "out.zarr"), shape=(2, 2), dtype="uint8")
    old[:] = 9
    if damage == "deleted":
        os.remove(src / "c" / "2" / "1")
        match = "chunk 'c/2/1' of '.*in.zarr' is missing.*missing_chunks='fill'"
    elif damage == "larger-shape":
        meta = json.loads((src / "zarr.json").read_text())
        meta["shape"] = [512, 256]
        (src / "zarr.json").write_text(json.dumps(meta))
        match = "chunk 'c/4/0' of '.*in.zarr' is missing"
    else:
        (src / "c" / "1" / "3").write_bytes(b"garbage!" * 9)
        match = "cannot decode chunk 'c/1/3' of '.*in.zarr': RuntimeError: Zstd"
    with pytest.raises(pdist.StoreError, match=match):
        pdist.filter_store(str(src), str(tmp_path / "out.zarr"), "median_filter", ksize=3, tile=64, client=client,
                           timeout=GATHER)
    assert sorted(os.listdir(tmp_path)) == ["in.zarr", "out.zarr"]
    assert (zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[:] == 9).all()


def test_map_videos_on_the_cluster_refuses_bad_arguments_in_the_call(client, clips):
    with pytest.raises(TypeError, match="spec"):
        pdist.map_videos(None, clips, client=client)
    with pytest.raises(ValueError, match="backend"):
        pdist.map_videos(SPEC, clips, client=client, backend="bogus")


def test_threads_mode_cluster_runs_in_this_process(tmp_path):
    """local_cluster(processes=False), the documented threads mode, starts and computes."""
    zarr = pytest.importorskip("zarr")
    img = portcv.data.synthetic_rgb(96, 80, seed=6)[..., 2]
    src = zarr.create_array(str(tmp_path / "in.zarr"), shape=img.shape, chunks=(32, 32), dtype="uint8")
    src[:] = img
    before = portcv.backend().name
    try:
        with _scratch(tmp_path / "dask"), \
                pdist.local_cluster("numpy", n_workers=2, processes=False, dashboard_address=":0") as cluster, \
                Client(cluster, timeout="30s") as threads:
            threads.wait_for_workers(2, timeout=30)
            assert set(threads.run(pdist.worker_backend).values()) == {"numpy"}
            out = pdist.filter_store(src, str(tmp_path / "out.zarr"), "median_filter", ksize=5, tile=32,
                                     client=threads, timeout=GATHER)
    finally:
        portcv.use(before)
    with portcv.using("numpy"):
        assert np.array_equal(out[:], portcv.to_numpy(portcv.filters.median_filter(img, 5)))
