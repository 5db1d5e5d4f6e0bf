"""The TCP stream server and client, and a synthetic frame source."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import math
import socket
import time
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .. import _validate
from .. import codec as _codec
from ._codec import StreamDecoder, StreamEncoder
from ._packets import (
    _CONTROL,
    CONTROL_KEYFRAME,
    CONTROL_MAGIC,
    DEFAULT_MAX_FRAME_BYTES,
    FLAG_END,
    HEADER_SIZE,
    MAGIC,
    StreamError,
    encode_end,
)


def _positive(value: Any, name: str, *, zero: bool = False) -> float:
    """A finite real number > 0 (``zero``: >= 0)."""
    number = _validate.real(value, name, positive=not zero)
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {number}")
    return number


def synthetic_source(height: int = 480, width: int = 640, *, frames: int | None = None, seed: int = 0,
                     noise: float = 4.0, variants: int = 8) -> Iterator[np.ndarray]:
    """Generated RGB video for streaming: a static scene with sensor noise and a moving square.

    ``variants`` noisy copies of :func:`portcv.data.synthetic_rgb`'s scene (Gaussian noise of
    standard deviation ``noise``) are made once and cycled, so frames come fast even at 1080p;
    a square of a third of the height moves across it. ``frames=None`` never ends. The arguments
    are checked when it is called, not at the first frame: ``height``, ``width`` positive ints
    (one frame at most 2**31 - 1 bytes), ``frames`` None or an int >= 0, ``seed`` an int >= 0,
    ``noise`` a real in [0, 255], ``variants`` an int in [1, 64] (each is a frame kept in memory).

    Examples
    --------
    >>> frames = list(synthetic_source(24, 32, frames=3))
    >>> len(frames), frames[0].shape, frames[0].dtype
    (3, (24, 32, 3), dtype('uint8'))
    """
    height = _validate.integer(height, "height", low=1)
    width = _validate.integer(width, "width", low=1)
    if 3 * height * width > _validate.MAX_ELEMENTS:
        raise ValueError(f"height, width: a {height}x{width} RGB frame has more than {_validate.MAX_ELEMENTS} bytes")
    frames = None if frames is None else _validate.integer(frames, "frames", low=0)
    seed = _validate.integer(seed, "seed", low=0)
    noise = _positive(noise, "noise", zero=True)
    if noise > 255:  # a deviation past the whole grey range only saturates (and overflows float32)
        raise ValueError(f"noise must be at most 255 grey levels, got {noise}")
    variants = _validate.integer(variants, "variants", low=1, high=64)
    return _synthetic_frames(height, width, frames, seed, noise, variants)


def _synthetic_frames(height: int, width: int, frames: int | None, seed: int, noise: float,
                      variants: int) -> Iterator[np.ndarray]:
    from ..data import synthetic_rgb

    rng = np.random.default_rng(seed)
    scene = synthetic_rgb(height, width, seed=seed).astype(np.float32)
    bank = [np.clip(np.rint(scene + np.float32(noise) * rng.standard_normal(scene.shape, np.float32)), 0, 255)
            .astype(np.uint8) for _ in range(variants)]
    side = max(1, height // 3)
    colour = np.array([230, 60, 40], np.uint8)
    t = 0
    while frames is None or t < frames:
        frame = bank[t % len(bank)].copy()
        x = (t * max(1, width // 60)) % max(1, width - side + 1)
        y = (height - side) // 2
        frame[y : y + side, x : x + side] = colour
        yield frame
        t += 1


@dataclasses.dataclass
class StreamStats:
    """Counters of a server or client; ``rate()`` gives frames/s, bytes/s and the saving."""

    frames: int = 0
    keyframes: int = 0
    deltas: int = 0
    payload_bytes: int = 0
    wire_bytes: int = 0
    raw_bytes: int = 0
    started: float = dataclasses.field(default_factory=time.perf_counter)
    stopped: float | None = None

    def stop(self) -> None:
        """Freeze the clock (rates then cover the time until now only)."""
        if self.stopped is None:
            self.stopped = time.perf_counter()

    def add(self, packet_len: int, frame_bytes: int, kind: str) -> None:
        self.frames += 1
        self.wire_bytes += packet_len
        self.payload_bytes += packet_len - HEADER_SIZE
        self.raw_bytes += frame_bytes
        if kind == "keyframe":
            self.keyframes += 1
        else:
            self.deltas += 1

    def rate(self) -> dict[str, float]:
        elapsed = max((self.stopped or time.perf_counter()) - self.started, 1e-9)
        return {
            "fps": self.frames / elapsed,
            "bytes_per_s": self.wire_bytes / elapsed,
            "saved": 1.0 - self.wire_bytes / self.raw_bytes if self.raw_bytes else 0.0,
            "bytes_per_frame": self.wire_bytes / self.frames if self.frames else 0.0,
        }

    def line(self, who: str) -> str:
        r = self.rate()
        return (f"{who}: {self.frames} frames ({self.keyframes} keyframes), {r['fps']:.1f} fps, "
                f"{r['bytes_per_s'] * 8 / 1e6:.2f} Mbit/s ({r['bytes_per_frame'] / 1e3:.1f} kB/frame), "
                f"{100 * r['saved']:.1f}% saved vs raw RGB")


_END_OF_SOURCE = object()


class _Client:
    """The server's view of one connection: a bounded queue of packets and its sender task."""

    def __init__(self, cid: int, writer: asyncio.StreamWriter, maxsize: int) -> None:
        self.id = cid
        self.writer = writer
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize)
        self.needs_keyframe = True
        self.lag_keyframes = 0
        self.requested_keyframes = 0
        self.sent_packets = 0
        self.closed = False

    def replace_queue_with(self, packet: bytes) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(packet)


def _address(host: Any, port: Any, *, lowest_port: int = 0) -> tuple[str, int]:
    if not isinstance(host, str) or not host:
        raise TypeError(f"host must be a non-empty string (a name or an IP address), got {host!r}")
    return host, _validate.integer(port, "port", low=lowest_port, high=65535)


def _callback(value: Any, name: str) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a function or None, got {type(value).__name__}")
    return value


def _size_or_none(value: Any, name: str) -> int | None:
    return None if value is None else _validate.integer(value, name, low=1)


class StreamServer:
    """Serve a frame source to any number of TCP clients (asyncio, 127.0.0.1 by default).

    Stages, joined by bounded queues (the report's capture / elaborate / send threads):
    *capture* pulls frames from ``source`` in a worker thread (``capture_queue`` frames at most
    wait), *encode* runs a :class:`StreamEncoder` in another worker thread, and one *send*
    task per client writes its queue (``client_queue`` packets at most) to the socket.

    Every new connection is first sent a keyframe of the current reference. When a client's
    queue is full (it reads slower than the stream), its queued packets are dropped and
    replaced by one keyframe: memory stays bounded and the client resumes exactly. A client's
    keyframe request (a :data:`CONTROL_KEYFRAME` control message) is honoured at the next frame.
    Capture starts when the first client connects (``wait_for_client``); when the source ends,
    every client gets an end-of-stream packet.

    Parameters
    ----------
    source : iterable of uint8 arrays
        Frames, all of one shape (a change of shape sends a keyframe).
    host, port : str, int
        Where to listen; port 0 picks a free one (see :attr:`port` after :meth:`start`).
    backend, threshold, encoding, keyframe_interval, prefilter
        Passed to :class:`StreamEncoder`.
    fps : float
        Pace the capture at this rate (0: as fast as the pipeline goes).
    capture_queue, client_queue : int
        Bounds of the frame queue between capture and encode, and of each client's packet queue.
    send_buffer : int, optional
        Kernel send buffer and asyncio write-buffer limit per client, in bytes (default: the
        system's and 64 KiB): how much a client may lag before its queue fills.
    on_encoded : callable, optional
        ``on_encoded(index, reference)`` after each frame, ``reference`` the NumPy picture
        every client will show for that index (tests compare clients against it).
    """

    def __init__(self, source: Iterable[Any], *, host: str = "127.0.0.1", port: int = 0, backend: str | None = None,
                 threshold: int = _codec.DEFAULT_THRESHOLD, encoding: str = "compact", keyframe_interval: int = 300,
                 prefilter: Callable[[Any], Any] | None = None, fps: float = 0.0, capture_queue: int = 4,
                 client_queue: int = 8, wait_for_client: bool = True, send_buffer: int | None = None,
                 on_encoded: Callable[[int, np.ndarray], None] | None = None,
                 log: Callable[[str], None] | None = None, stats_every: float = 2.0) -> None:
        if not hasattr(source, "__iter__"):
            raise TypeError(f"source must be an iterable of frames, got {type(source).__name__}")
        self.source = source
        self.host, self.port = _address(host, port)
        self.encoder = StreamEncoder(threshold=threshold, encoding=encoding, keyframe_interval=keyframe_interval,
                                     backend=backend, prefilter=prefilter)
        self.fps = _positive(fps, "fps", zero=True)
        self.capture_queue_size = _validate.integer(capture_queue, "capture_queue", low=1)
        self.client_queue_size = _validate.integer(client_queue, "client_queue", low=1)
        self.wait_for_client = _validate.boolean(wait_for_client, "wait_for_client")
        self.send_buffer = _size_or_none(send_buffer, "send_buffer")
        self.on_encoded = _callback(on_encoded, "on_encoded")
        self.log = _callback(log, "log") or (lambda msg: None)
        self.stats_every = _positive(stats_every, "stats_every", zero=True)  # 0: no statistics lines
        self.stats = StreamStats()
        self.clients: dict[int, _Client] = {}
        self.max_client_queue = 0
        self.max_capture_queue = 0
        self.dropped_to_keyframe = 0
        self.connections = 0
        self._next_id = 0
        self._server: asyncio.base_events.Server | None = None
        self._first_client = asyncio.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="portcv-stream")

    async def start(self) -> int:
        """Listen; return the port."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def run(self) -> StreamStats:
        """Serve until the source ends and every client got the end packet (or left)."""
        if self._server is None:
            await self.start()
        frames: asyncio.Queue[Any] = asyncio.Queue(self.capture_queue_size)
        try:
            if self.wait_for_client:
                await self._first_client.wait()
            self.stats = StreamStats()
            capture = asyncio.create_task(self._capture(frames))
            try:
                await self._encode_loop(frames)
            finally:
                self.stats.stop()
                capture.cancel()
                await asyncio.gather(capture, return_exceptions=True)
            end = encode_end(max(self.encoder.index + 1, 0))
            for c in list(self.clients.values()):
                if c.closed:
                    continue
                if c.queue.full():
                    c.replace_queue_with(end)
                else:
                    c.queue.put_nowait(end)
            deadline = time.perf_counter() + 5.0
            while any(not c.closed and not c.queue.empty() for c in self.clients.values()):
                if time.perf_counter() > deadline:
                    break
                await asyncio.sleep(0.01)
        finally:
            await self.close()
        self.log(self.stats.line("serve"))
        return self.stats

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for c in list(self.clients.values()):
                self._drop(c)
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - closing anyway
                pass
            self._server = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- stages -------------------------------------------------------------------------------
    async def _capture(self, frames: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        it = iter(self.source)
        done = _END_OF_SOURCE
        period = 1.0 / self.fps if self.fps > 0 else 0.0
        next_time = time.perf_counter()
        while True:
            frame = await loop.run_in_executor(self._pool, next, it, done)
            if period:
                next_time += period
                delay = next_time - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            await frames.put(frame)
            self.max_capture_queue = max(self.max_capture_queue, frames.qsize())
            if frame is done:
                return

    async def _encode_loop(self, frames: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        last_log = time.perf_counter()
        while True:
            frame = await frames.get()
            if frame is _END_OF_SOURCE:
                return
            if self.stats.frames == 0:
                self.stats = StreamStats()  # rates count from the first frame
            packet, reference = await loop.run_in_executor(self._pool, self._encode, frame)
            index = self.encoder.index
            self.stats.add(len(packet), int(math.prod(frame.shape)), self.encoder.last_kind)
            if self.on_encoded is not None:
                self.on_encoded(index, reference)
            for c in list(self.clients.values()):
                self._offer(c, packet)
            now = time.perf_counter()
            if self.stats_every and now - last_log >= self.stats_every:
                last_log = now
                self.log(self.stats.line("serve") + f", {len(self.clients)} client(s)")

    def _encode(self, frame: Any) -> tuple[bytes, np.ndarray | None]:
        packet = self.encoder.encode(frame)
        reference = self.encoder.delta.reference_host() if self.on_encoded is not None else None
        return packet, reference

    def _offer(self, c: _Client, packet: bytes) -> None:
        if c.closed:
            return
        if self.encoder.last_kind == "keyframe":
            c.needs_keyframe = False
            if c.queue.full():
                c.replace_queue_with(packet)
            else:
                c.queue.put_nowait(packet)
        elif c.needs_keyframe:
            c.needs_keyframe = False
            c.replace_queue_with(self.encoder.keyframe_packet())
        elif c.queue.full():
            c.lag_keyframes += 1
            self.dropped_to_keyframe += 1
            c.replace_queue_with(self.encoder.keyframe_packet())
        else:
            c.queue.put_nowait(packet)
        self.max_client_queue = max(self.max_client_queue, c.queue.qsize())

    # -- connections --------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.send_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        if self.send_buffer:  # asyncio's own buffer too (64 KiB by default) before drain() waits
            writer.transport.set_write_buffer_limits(high=self.send_buffer)
        cid = self._next_id
        self._next_id += 1
        self.connections += 1
        c = _Client(cid, writer, self.client_queue_size)
        self.clients[cid] = c
        self.log(f"serve: client {cid} connected from {writer.get_extra_info('peername')}")
        self._first_client.set()
        sender = asyncio.create_task(self._send(c))
        try:
            while True:
                try:
                    data = await reader.readexactly(_CONTROL.size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                magic, kind = _CONTROL.unpack(data)
                if magic != CONTROL_MAGIC:
                    self.log(f"serve: client {cid} sent a bad control message; closing it")
                    break
                if kind == CONTROL_KEYFRAME:
                    c.requested_keyframes += 1
                    c.needs_keyframe = True
        finally:
            self._drop(c)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self.clients.pop(cid, None)
            self.log(f"serve: client {cid} left ({c.sent_packets} packets sent, {c.lag_keyframes} lag keyframes)")
            if not self.clients:
                pace = f"at {self.fps:g} fps" if self.fps > 0 else "unpaced"
                self.log(f"serve: no client connected; the source goes on ({pace}), waiting for a client")

    async def _send(self, c: _Client) -> None:
        try:
            while True:
                packet = await c.queue.get()
                c.writer.write(packet)
                await c.writer.drain()
                c.sent_packets += 1
                if packet[5:6] == bytes([FLAG_END]) and packet[:4] == MAGIC:
                    c.writer.close()
                    c.closed = True
                    return
        except (ConnectionError, OSError):
            self._drop(c)

    def _drop(self, c: _Client) -> None:
        if not c.closed:
            c.closed = True
            c.writer.close()
        while not c.queue.empty():
            c.queue.get_nowait()


class StreamClient:
    """Receive a stream, check every packet, reconstruct the frames.

    Damaged payloads (CRC mismatch, impossible contents) make the client ask for a keyframe
    (at most one request per ``keyframe_retry`` seconds while it waits); a damaged header means
    the byte stream cannot be trusted, so the client reconnects (and gets a keyframe). Lost
    connections are retried until no packet has arrived for ``reconnect_timeout`` seconds.

    Parameters
    ----------
    host, port : str, int
        The server (``port`` is required: :attr:`StreamServer.port` once it has started).
    on_frame : callable, optional
        ``on_frame(index, frame)`` for every frame reconstructed (a read-only NumPy array that
        the client never changes afterwards; it may be a coroutine function).
    frames : int, optional
        Stop after this many frames.
    max_frame_bytes : int
        The decoder's limit (see :class:`StreamDecoder`).
    recv_buffer : int, optional
        Socket receive buffer and reader buffer size in bytes (default: the system's); small
        values make a slow client felt by the server sooner.
    """

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, *, on_frame: Callable[[int, np.ndarray], Any] | None = None,
                 frames: int | None = None, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 reconnect_timeout: float = 5.0, keyframe_retry: float = 0.5, recv_buffer: int | None = None,
                 log: Callable[[str], None] | None = None, stats_every: float = 2.0) -> None:
        if port is None:
            raise TypeError("port is required: the server's port (StreamServer.port after start())")
        self.host, self.port = _address(host, port, lowest_port=1)  # 0 picks a port to listen on, not to reach
        self.recv_buffer = _size_or_none(recv_buffer, "recv_buffer")
        self.on_frame = _callback(on_frame, "on_frame")
        self.frames = _size_or_none(frames, "frames")
        self.decoder = StreamDecoder(max_frame_bytes=max_frame_bytes)
        self.reconnect_timeout = _positive(reconnect_timeout, "reconnect_timeout")
        self.keyframe_retry = _positive(keyframe_retry, "keyframe_retry")
        self.log = _callback(log, "log") or (lambda msg: None)
        self.stats_every = _positive(stats_every, "stats_every", zero=True)  # 0: no statistics lines
        self.stats = StreamStats()
        self.errors: dict[str, int] = {}
        self.keyframe_requests = 0
        self.connections = 0
        self.skipped = 0
        self._writer: asyncio.StreamWriter | None = None
        self._stop = False
        self._last_request = -math.inf
        self._awaiting_keyframe = False

    def stop(self) -> None:
        self._stop = True
        if self._writer is not None:
            self._writer.close()

    def disconnect(self) -> None:
        """Drop the current connection (the client reconnects): for tests and demos."""
        if self._writer is not None:
            self._writer.close()

    async def run(self) -> StreamStats:
        """Receive until the end packet, ``frames`` frames, :meth:`stop` or a lost server."""
        self.stats = StreamStats()
        last_log = time.perf_counter()
        # Give up when no packet arrived for reconnect_timeout seconds, whether connecting fails
        # or connections succeed but deliver nothing (a dead server behind a live proxy).
        progress = time.perf_counter()
        first = True
        while not self._stop and not self.decoder.ended:
            if not first:
                if time.perf_counter() - progress > self.reconnect_timeout:
                    self.log(f"view: nothing from {self.host}:{self.port} for {self.reconnect_timeout} s; giving up")
                    break
                await asyncio.sleep(0.05)
            first = False
            try:
                reader, writer = await self._connect()
            except OSError:
                continue
            self.connections += 1
            self._writer = writer
            self.decoder.needs_keyframe = True  # a new connection starts with a keyframe
            try:
                while not self._stop:
                    try:
                        head = await reader.readexactly(HEADER_SIZE)
                        header = self.decoder.parse_header(head)
                        payload = await reader.readexactly(header.payload_length)
                        progress = time.perf_counter()
                    except StreamError as exc:
                        self._count(exc)
                        self.log(f"view: {exc}; reconnecting")
                        break
                    except (asyncio.IncompleteReadError, ConnectionError, OSError):
                        break
                    try:
                        out = self.decoder.apply(header, payload)
                    except StreamError as exc:
                        self._count(exc)
                        if exc.reason == "no_keyframe":
                            self.skipped += 1
                        await self._ask_keyframe(writer)
                        continue
                    if out is None:  # end of stream
                        break
                    if header.kind == "keyframe":
                        self._awaiting_keyframe = False
                    index, frame = out
                    if self.stats.frames == 0:
                        self.stats = StreamStats()  # rates count from the first frame
                    self.stats.add(HEADER_SIZE + len(payload), frame.size, header.kind)
                    if self.on_frame is not None:
                        result = self.on_frame(index, frame)
                        if asyncio.iscoroutine(result):
                            await result
                    if self.frames is not None and self.stats.frames >= self.frames:
                        self._stop = True
                    now = time.perf_counter()
                    if self.stats_every and now - last_log >= self.stats_every:
                        last_log = now
                        self.log(self.stats.line("view"))
            finally:
                writer.close()
                self._writer = None
        self.log(self.stats.line("view") + (f"; {sum(self.errors.values())} bad packets {self.errors}" if self.errors else ""))
        return self.stats

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if not self.recv_buffer:
            return await asyncio.open_connection(self.host, self.port)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.recv_buffer)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, (self.host, self.port))
        except OSError:
            sock.close()
            raise
        return await asyncio.open_connection(sock=sock, limit=self.recv_buffer)

    def _count(self, exc: StreamError) -> None:
        self.errors[exc.reason] = self.errors.get(exc.reason, 0) + 1

    async def _ask_keyframe(self, writer: asyncio.StreamWriter) -> None:
        # Ask at once; while waiting (deltas in flight keep failing), ask again only after
        # keyframe_retry seconds, in case the request or its answer was lost.
        now = time.perf_counter()
        if self._awaiting_keyframe and now - self._last_request < self.keyframe_retry:
            return
        self._awaiting_keyframe = True
        self._last_request = now
        self.keyframe_requests += 1
        try:
            writer.write(_CONTROL.pack(CONTROL_MAGIC, CONTROL_KEYFRAME))
            await writer.drain()
        except (ConnectionError, OSError):
            pass
