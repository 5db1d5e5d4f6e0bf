"""portcv.verify: the run time of every golden case on the NumPy backend, what a certificate costs.

``Verify.time_verify`` runs all golden cases at one thread count per sample (``threads``: 1, or
every core this process may use), without OpenCV. JAX is not timed here: its time is XLA
compiling each case's shape on the first call of a process (tens of seconds on 2 cores; the
figure is in docs/reproducibility.md), and later calls in the same process measure nothing a
user waits for.
"""

from __future__ import annotations

import portcv

from ._common import Benchmark


class Verify(Benchmark):
    params = [["1", "all"]]
    param_names = ["threads"]
    timeout = 300

    def setup(self, threads: str) -> None:
        from portcv.backends.numpy import host_threads

        self.threads = 1 if threads == "1" else host_threads()
        portcv.verify(backends="numpy", threads=self.threads, opencv=False)  # inputs built, overrides warm

    def time_verify(self, threads: str) -> None:
        portcv.verify(backends="numpy", threads=self.threads, opencv=False)
