"""Decoding on the GPU with NVDEC through PyNvVideoCodec (``pip install 'portcv[video-gpu]'``).

PyNvVideoCodec is imported when a file is opened with ``device="gpu"`` (or ``"auto"`` on a GPU
backend), never by ``import portcv``. Its demuxer feeds its decoder packet by packet; each decoded
frame is an NV12 surface (``H * 3 / 2`` rows of ``W`` bytes: the Y plane, then the interleaved
U/V plane) that DLPack hands to the active backend without a copy.

A decoder reuses its surfaces: a frame's memory may be rewritten by a later ``Decode`` call
(PyNvVideoCodec keeps a frame only through its separate locked-frame calls). So every
frame handed to the caller is owned: gray frames are one device copy of the Y plane, colour
frames the new array :func:`portcv.color.nv12_to_rgb` returns; both are finished before the next
packet is decoded (:func:`_settle`), so the decoder never overwrites a frame still being read.

H.264 and HEVC decoding is defined sample by sample by the standards: NVDEC's Y plane equals
FFmpeg's (the CPU path's) byte for byte. Frame indices count decoded frames in presentation
order from the start of the file, as the CPU path's do.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Iterator

from ._io import VideoError

MODULE = "PyNvVideoCodec"
INSTALL_HINT = "pip install 'portcv[video-gpu]'"


class NvdecUnavailable(VideoError):
    """NVDEC cannot decode this file here (its codec, or no NVDEC): ``device="auto"`` falls back
    to the CPU; ``device="gpu"`` raises it (a :class:`~portcv.video.VideoError`)."""


def installed() -> bool:
    """Whether PyNvVideoCodec can be imported (without importing it)."""
    if sys.modules.get(MODULE) is not None:
        return True
    try:
        return importlib.util.find_spec(MODULE) is not None
    except (ImportError, ValueError):  # a module in sys.modules with no spec
        return False


def is_gpu_backend(backend: Any) -> bool:
    """Whether ``backend``'s arrays live on a GPU (the backend's own policy, never its name)."""
    return not backend.runs_on_host


def load(path: Path) -> Any:
    """Import PyNvVideoCodec, or raise a clear error: the extra is missing, or NVDEC's driver is."""
    try:
        import PyNvVideoCodec as nvc
    except ModuleNotFoundError as exc:
        if exc.name != MODULE:
            raise _no_nvdec(path, exc) from None
        raise VideoError(f"GPU decode (device='gpu') needs PyNvVideoCodec: {INSTALL_HINT}") from None
    except Exception as exc:  # installed, but the driver's libraries cannot be loaded: its import
        # checks the driver (libnvidia-encode, libnvcuvid) and raises a RuntimeError, or an ImportError
        raise _no_nvdec(path, exc) from None
    return nvc


def _no_nvdec(path: Path, exc: BaseException) -> NvdecUnavailable:
    first_line = (str(exc).strip().splitlines() or [""])[0]  # PyNvVideoCodec appends troubleshooting text
    return NvdecUnavailable(
        f"cannot decode video {str(path)!r} on the GPU: this machine has no usable NVDEC "
        f"(PyNvVideoCodec: {type(exc).__name__}: {first_line}); use device='cpu'")


def _unsupported(path: Path, codec: Any, exc: BaseException) -> NvdecUnavailable:
    return NvdecUnavailable(
        f"cannot decode video {str(path)!r} on the GPU: NVDEC does not take its codec ({codec}) "
        f"on this GPU (PyNvVideoCodec: {type(exc).__name__}: {exc}); use device='cpu'")


def _is_unsupported(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "unsupported" in text or "not supported" in text


#: Codecs whose standards fix every decoded sample (integer transforms, normative rounding), so
#: NVDEC returns FFmpeg's bits. MPEG-1/2, MPEG-4 part 2 and JPEG leave the inverse DCT to each
#: decoder: on the H200, NVDEC's MPEG-4 frames differ from FFmpeg's by up to 2 levels in 3 % of
#: their pixels. Those are read on the CPU.
EXACT_CODECS = frozenset({"H264", "HEVC", "AV1", "VP9", "VP8"})


def frames(path: Path, start: int, gray: bool, backend: Any) -> Iterator[Any]:
    """Frames ``start, start + 1, ...`` of ``path`` decoded by NVDEC, as owned arrays of ``backend``.

    Raises :class:`NvdecUnavailable` before the first frame when NVDEC cannot decode the file here,
    and :class:`portcv.video.VideoError` for a file that is not a video or holds too few frames.
    """
    convert = None if gray else _nv12_to_rgb()
    nvc = load(path)
    try:
        demuxer = nvc.CreateDemuxer(filename=str(path))
    except Exception as exc:  # FFmpeg's demuxer inside PyNvVideoCodec: not a video, no video stream
        raise VideoError(f"cannot read video {str(path)!r}: {type(exc).__name__}: {exc}") from None
    codec = _codec_name(demuxer)
    if codec.rsplit(".", 1)[-1].upper() not in EXACT_CODECS:
        raise NvdecUnavailable(f"cannot decode video {str(path)!r} on the GPU: NVDEC's decode of its codec ({codec}) "
                               "is not bit for bit FFmpeg's (the standard leaves the inverse DCT to each decoder); "
                               "use device='cpu'")
    size = _stream_size(demuxer)
    if size is not None and (size[0] % 2 or size[1] % 2):
        # NVDEC's surfaces of odd-sized streams are cropped or padded to even sizes (an H.264 or
        # MPEG-4 stream of 47 x 63 decodes to 46 x 64 on the H200): rows would be lost
        raise NvdecUnavailable(f"cannot decode video {str(path)!r} on the GPU: its frames are {size[1]} x {size[0]}, "
                               "and NVDEC decodes only even widths and heights exactly; use device='cpu'")
    try:
        decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0, cudastream=0,
                                    usedevicememory=True)
    except Exception as exc:  # no GPU, no NVDEC engine, or a codec NVDEC has no engine for
        raise (_unsupported(path, codec, exc) if _is_unsupported(exc) else _no_nvdec(path, exc)) from None
    index, pending = 0, []
    try:
        for packet in demuxer:
            _settle(pending)  # the frames handed out are copied before the decoder reuses surfaces
            pending = []
            try:
                decoded = decoder.Decode(packet)
            except Exception as exc:  # the codec's limits (size, profile, bit depth) show here
                if index == 0 and _is_unsupported(exc):
                    raise _unsupported(path, codec, exc) from None
                raise VideoError(f"cannot decode video {str(path)!r} on the GPU: "
                                 f"{type(exc).__name__}: {exc}") from None
            for surface in decoded:
                if index >= start:
                    frame, wait = _owned(surface, gray, convert, backend, path, size)
                    pending.append(wait)
                    yield frame
                index += 1
    except (GeneratorExit, VideoError):
        raise
    except Exception as exc:  # the demuxer's errors mid-file: truncated, corrupt
        raise VideoError(f"cannot read video {str(path)!r}: {type(exc).__name__}: {exc}") from None
    finally:
        _settle(pending)  # the last copies read surfaces the decoder frees with itself
    if index == 0:
        raise VideoError(f"cannot read video {str(path)!r}: it holds no video frames")
    if index <= start:
        raise VideoError(f"cannot read video {str(path)!r} from frame {start}: it has {index} frames")


def _codec_name(demuxer: Any) -> str:
    try:
        return str(demuxer.GetNvCodecId())
    except Exception:  # noqa: BLE001 - only for the message
        return "unknown codec"


def _stream_size(demuxer: Any) -> tuple[int, int] | None:
    """The stream's ``(height, width)`` from its header, or None where the demuxer does not say."""
    try:
        return int(demuxer.Height()), int(demuxer.Width())
    except Exception:  # noqa: BLE001 - a demuxer without the size: the surface's shape is checked alone
        return None


def _nv12_to_rgb() -> Any:
    from .. import color

    convert = getattr(color, "nv12_to_rgb", None)
    if convert is None:  # the NV12 -> RGB kernel ships separately from the decoder
        raise NvdecUnavailable(
            "colour GPU decode needs portcv.color.nv12_to_rgb, which this portcv lacks; "
            "read gray frames (gray=True: the Y plane) or decode on the CPU (device='cpu')")
    return convert


def _owned(surface: Any, gray: bool, convert: Any, backend: Any, path: Path,
           size: tuple[int, int] | None) -> tuple[Any, Any]:
    """One decoded surface as an array of ``backend`` that no later decode writes into, and a
    callable that waits until that array is written (``None`` where it already is)."""
    fmt = getattr(surface, "format", None)
    if fmt is not None and "NV12" not in str(fmt).upper():
        # 4:4:4 or 10-bit: the CPU path reads them (device="auto" falls back to it)
        raise NvdecUnavailable(f"cannot decode video {str(path)!r} on the GPU: NVDEC returned {fmt} frames; "
                               "portcv reads 8-bit 4:2:0 video (NV12) there; use device='cpu'")
    nv12 = backend.xp.from_dlpack(surface)  # a view of the decoder's surface: no copy
    if nv12.ndim != 2 or str(nv12.dtype) != "uint8":
        raise VideoError(f"cannot decode video {str(path)!r} on the GPU: NVDEC returned a "
                         f"{nv12.dtype} {tuple(nv12.shape)} frame, not NV12 uint8 (H * 3 / 2, W)")
    if not gray and (nv12.shape[0] % 3 or nv12.shape[1] % 2):
        # OpenCV's conversion (the CPU path's for even sizes) is not defined for odd sizes; the CPU
        # path converts those frames with FFmpeg, which NVDEC's frames cannot match bit for bit
        raise NvdecUnavailable(f"cannot decode video {str(path)!r} in colour on the GPU: its frames have an "
                               f"odd width or height (an NV12 surface of shape {tuple(nv12.shape)}); use device='cpu'")
    height = (2 * nv12.shape[0]) // 3  # NV12 rows: H of luma, then ceil(H / 2) of chroma
    if size is not None and (height, nv12.shape[1]) != size:
        raise VideoError(f"cannot decode video {str(path)!r} on the GPU: NVDEC returned a {nv12.shape[1]} x {height} "
                         f"frame of a {size[1]} x {size[0]} stream; use device='cpu'")
    frame = _copy(backend, nv12[:height]) if gray else convert(nv12)
    return frame, _written(frame)


def _copy(backend: Any, view: Any) -> Any:
    """A device copy of ``view`` in memory of its own (the decoder's surface is reused)."""
    xp = backend.xp
    try:
        return xp.asarray(view, copy=True)
    except TypeError:  # an array namespace whose asarray takes no copy=
        return xp.array(view, copy=True)


def _written(frame: Any) -> Any:
    """A wait for ``frame``'s own copy or conversion alone (not work queued after it), or None."""
    ready = getattr(frame, "block_until_ready", None)  # JAX: dispatched asynchronously
    if ready is not None:
        return ready
    if hasattr(frame, "__cuda_array_interface__"):  # CuPy: queued on the current stream, an event after it
        import cupy

        event = cupy.cuda.Event(block=False, disable_timing=True)
        event.record()
        return event.synchronize
    return None  # host memory: written when returned


def _settle(waits: list) -> None:
    """Wait until the frames handed out from the last packet are written: their surfaces may be
    reused by the next ``Decode``."""
    for wait in waits:
        if wait is not None:
            wait()
