"""Video from file to result on the GPU: NVDEC alone, NVDEC + motion, N files at once, against the CPU decoders.

Frames per second of 1080p H.264 clips (a noisy pan over a mosaic of scikit-image's photos, GOP
30, libx264's defaults; one clip encoded here, copied once per session) through
``portcv.distributed.map_videos(motion(...))`` on CuPy, from the file on disk to the regions on
the host, with each decoder:

- ``nvdec alone``: PyNvVideoCodec's demuxer and decoder with nothing done to the frames (the
  ceiling of one session);
- ``pipeline``: NVDEC into CuPy (``decoder="gpu"``), ``sessions`` files at once;
- ``cpu decode``: PyAV (FFmpeg) on the host, uploaded, same kernels: threads in this process
  (``sessions``) and one process per core (``--processes``), the best of both reported;
- ``4k hevc + mct``: a 4K HEVC clip through the MCT face detector, beside NVDEC alone on it.

    python -m tools.measure gpu-video [--frames 240] [--sessions 1,2,4,8,12,16] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

import numpy as np


def mosaic(height: int, width: int) -> np.ndarray:
    from skimage import data, transform

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(), np.stack([data.camera()] * 3, -1)]
    tile = 540
    tiles = [(transform.resize(p, (tile, tile), anti_aliasing=True) * 255).astype(np.uint8) for p in photos]
    rows = []
    for r in range(-(-height // tile) + 1):
        rows.append(np.concatenate([tiles[(r * 3 + c) % len(tiles)] for c in range(-(-width // tile) + 2)], 1))
    return np.concatenate(rows, 0)


def write_clip(path: str, frames: int, height: int, width: int, codec: str, options: dict) -> str:
    import av

    base = mosaic(height, width)
    rng = np.random.default_rng(0)
    with av.open(path, "w") as container:
        stream = container.add_stream(codec, rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = options
        for k in range(frames):
            y, x = (3 * k) % (base.shape[0] - height), (5 * k) % (base.shape[1] - width)
            frame = base[y:y + height, x:x + width].astype(np.int16) + rng.integers(-6, 7, (height, width, 1),
                                                                                     dtype=np.int16)
            picture = av.VideoFrame.from_ndarray(np.clip(frame, 0, 255).astype(np.uint8), format="rgb24")
            picture.pts = k
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def nvdec_alone(path: str) -> float:
    import cupy
    import PyNvVideoCodec as nvc

    t0 = time.perf_counter()
    demuxer = nvc.CreateDemuxer(filename=path)
    decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0, cudastream=0,
                                usedevicememory=True)
    count = 0
    for packet in demuxer:
        count += len(decoder.Decode(packet))
    cupy.cuda.Device().synchronize()
    return count / (time.perf_counter() - t0)


def pipeline(spec, paths: list, sessions: int, decoder: str) -> tuple[float, set]:
    import portcv.distributed as pdist

    t0 = time.perf_counter()
    runs = list(pdist.map_videos(spec, paths, backend="cupy", decoder=decoder, sessions=sessions, progress=False))
    seconds = time.perf_counter() - t0
    errors = [r.error for r in runs if r.error]
    if errors:
        raise RuntimeError(errors[0])
    return sum(r.frames for r in runs) / seconds, {r.decoder for r in runs}


def _cpu_process(job: tuple) -> int:
    path, params = job
    import portcv.distributed as pdist

    value = pdist.process_video(path, pdist.motion(**params), backend="cupy", decoder="cpu")
    return int(value["regions"].shape[0]) + 1


def cpu_processes(paths: list, params: dict, processes: int) -> float:
    import multiprocessing

    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_cpu_process, [(paths[0], params)] * processes))  # start-up and warm-up, untimed
        t0 = time.perf_counter()
        frames = sum(pool.map(_cpu_process, [(p, params) for p in paths]))
        return frames / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--sessions", default="1,2,4,8,12,16")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-4k", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import portcv.distributed as pdist

    counts = [int(v) for v in args.sessions.split(",")]
    params = {"t_low": 70, "t_high": 80}
    spec = pdist.motion(**params)
    folder = tempfile.mkdtemp(prefix="portcv-gpu-video-")
    out: dict = {"clip": f"1080p H.264, {args.frames} frames, GOP 30, libx264 defaults, noisy pan over photos"}
    try:
        t0 = time.perf_counter()
        clip = write_clip(os.path.join(folder, "pan0.mp4"), args.frames, 1080, 1920, "libx264",
                          {"g": "30", "keyint_min": "30"})
        print(f"encoded the clip in {time.perf_counter() - t0:.1f} s")
        paths = [clip]
        for k in range(1, max(counts + [args.processes])):
            paths.append(shutil.copy(clip, os.path.join(folder, f"pan{k}.mp4")))
        pipeline(spec, paths[:1], 1, "gpu")  # compile and warm the kernels, untimed
        out["nvdec_alone_fps"] = max(nvdec_alone(clip) for _ in range(2))
        out["pipeline_one_file_fps"], decoders = max(pipeline(spec, paths[:1], 1, "gpu") for _ in range(2))
        out["pipeline_decoder"] = sorted(decoders)
        out["one_file_share_of_nvdec"] = out["pipeline_one_file_fps"] / out["nvdec_alone_fps"]
        print(f"NVDEC alone, one session: {out['nvdec_alone_fps']:.0f} fps; NVDEC + motion on CuPy, one file: "
              f"{out['pipeline_one_file_fps']:.0f} fps ({100 * out['one_file_share_of_nvdec']:.1f} % of NVDEC's rate; "
              f"decoder {decoders})")
        out["sessions"] = {}
        for n in counts:
            fps, decoders = pipeline(spec, paths[:n], n, "gpu")
            out["sessions"][n] = fps
            print(f"  {n:2d} files at once, NVDEC + motion: {fps:7.0f} fps aggregate ({decoders})")
        n = max(counts)
        cpu_threads, _ = pipeline(spec, paths[:n], n, "cpu")
        print(f"  {n:2d} files at once, CPU decode (PyAV threads) + motion on CuPy: {cpu_threads:7.0f} fps")
        cpu_procs = cpu_processes(paths[:args.processes], params, args.processes)
        print(f"  {args.processes:2d} processes, CPU decode (PyAV) + motion on CuPy: {cpu_procs:7.0f} fps")
        out["cpu_decode_threads_fps"], out["cpu_decode_processes_fps"] = cpu_threads, cpu_procs
        best_gpu, best_cpu = max(out["sessions"].values()), max(cpu_threads, cpu_procs)
        out["gpu_over_best_cpu"] = best_gpu / best_cpu
        print(f"best NVDEC pipeline {best_gpu:.0f} fps = {out['gpu_over_best_cpu']:.2f}x the best CPU-decode "
              f"pipeline ({best_cpu:.0f} fps)")
        if not args.skip_4k:
            import av

            if "libx265" in av.codecs_available:
                hevc = write_clip(os.path.join(folder, "pan4k.mp4"), 60, 2160, 3840, "libx265",
                                  {"g": "30", "preset": "ultrafast", "x265-params": "log-level=error"})
                faces = pdist.faces("mct_frontalface_24.npz")
                t0 = time.perf_counter()
                list(pdist.map_videos(faces, [hevc], backend="cupy", decoder="gpu", progress=False))  # warm
                fps_alone = max(nvdec_alone(hevc) for _ in range(2))
                runs = []
                for _ in range(2):
                    t0 = time.perf_counter()
                    run = next(pdist.map_videos(faces, [hevc], backend="cupy", decoder="gpu", progress=False))
                    if run.error:
                        raise RuntimeError(run.error)
                    runs.append(run.frames / (time.perf_counter() - t0))
                out["hevc4k_nvdec_alone_fps"], out["hevc4k_mct_fps"] = fps_alone, max(runs)
                print(f"4K HEVC: NVDEC alone {fps_alone:.0f} fps; NVDEC + MCT face detection {max(runs):.0f} fps "
                      f"({100 * max(runs) / fps_alone:.0f} % of the decode rate; decoder {run.decoder})")
            else:
                print("4K HEVC: PyAV here has no libx265; not measured")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
