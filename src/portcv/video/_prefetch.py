"""Decoding ahead of the caller: a frame iterator run in a background thread.

Both decoders release the GIL while they decode (FFmpeg inside PyAV, NVDEC inside
PyNvVideoCodec), so a thread that decodes the next frames while the caller computes on the last
one hides the shorter of the two behind the longer. The frames are the iterator's own, in its
order: every frame a decoder hands out is already owned (the GPU path copies or converts each
surface before it decodes the next packet), so a frame waiting in the queue is never rewritten.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from typing import Any, Iterator

#: How long the consumer and the producer wait on the queue before they look again whether the
#: other side stopped: the bound on how late a close or a dead thread is noticed.
_POLL_S = 0.05
#: How long ``close`` waits for the thread to finish the frame it is decoding.
_JOIN_S = 30.0
_END = object()


class Prefetched:
    """``source``'s items, produced up to ``depth`` ahead by a daemon thread.

    The thread runs in a copy of the caller's context, so it decodes into the backend active
    where the iterator was made. An exception in the thread is raised by the ``next()`` that
    reaches it, after the items before it. :meth:`close` stops the thread and closes ``source``
    there (a generator's ``finally`` releases its decoder on the thread that ran it).
    """

    def __init__(self, source: Iterator[Any], depth: int) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._produce, source), daemon=True,
                                        name="portcv-decode-ahead")
        self._thread.start()

    def _put(self, item: Any) -> bool:
        """Queue ``item`` unless the consumer stopped first; whether it was queued."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, source: Iterator[Any]) -> None:
        try:
            for item in source:
                if not self._put((item, None)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((_END, exc))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def __iter__(self) -> "Prefetched":
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        while True:
            try:
                item, error = self._queue.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self._done = True  # the thread ended without a last word (closed meanwhile)
                    raise StopIteration from None
        if item is _END:
            self._done = True
            if error is not None:
                raise error
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop decoding ahead; the frames still queued are dropped."""
        self._done = True
        self._stop.set()
        while True:  # unblock a producer waiting for room
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread():
            self._thread.join(_JOIN_S)
