"""GPU figures of portcv.recognize against the thesis's Tables 4.2 and 4.3 (docs/recognize.md):
LBP histograms of 1,024 faces of 130 x 150 at (P, R) = (8, 2) and (16, 2), and the 1-NN of
one query (and of 16) against N = 20,000 histograms of d = 11,907 bins, on CuPy and JAX. Time
per call of back-to-back calls (CUDA events on CuPy, one wait at the end on JAX), with one
synchronized call beside it.

    python -m tools.measure recognize-gpu
"""

from __future__ import annotations

import numpy as np

import portcv
from portcv._timing import queued_ms, synced_ms


def face_like_gallery(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 7, 7, 243) uint16: per region, 378 pixels (18 x 21) drawn over the 243 (16, 2)^u2
    labels with face-like skew (a few labels hold most pixels, many stay empty)."""
    pvals = rng.dirichlet(np.full(243, 0.08), size=49)
    out = np.empty((n, 49, 243), np.uint16)
    for j in range(49):
        out[:, j] = rng.multinomial(378, pvals[j], size=n)
    return out.reshape(n, 7, 7, 243)


def timed(name: str, b, fn, count: int = 1) -> str:
    per_call = queued_ms(name, fn, repeat=20, warmup=3, rounds=3)
    single = synced_ms(lambda: b.block(fn()), n=5)
    return f"{1e3 * per_call / count:9.1f} us per item ({per_call:7.3f} ms per call), single call {single:7.3f} ms"


def main() -> None:
    rng = np.random.default_rng(2012)
    faces = rng.integers(0, 256, (1024, 150, 130), dtype=np.uint8)
    gallery = face_like_gallery(20000, rng)
    queries = gallery[rng.integers(0, 20000, 16)] // 2 + face_like_gallery(16, rng) // 2
    weights = portcv.recognize.AHONEN_WEIGHTS_7X7
    for name in ("cupy", "jax"):
        with portcv.using(name) as b:
            x = portcv.asarray(faces)
            for P in (8, 16):
                fn = lambda: portcv.recognize.lbp_histograms(x, P=P, R=2.0, region_size=(18, 21))
                print(f"lbp_histograms 1024 faces ({P}, 2) {name:5s}: {timed(name, b, fn, 1024)}", flush=True)
                fn = lambda: portcv.recognize.local_binary_pattern(x, P, 2.0, method="u2", border="valid")
                print(f"local_binary_pattern 1024 faces ({P}, 2) {name:5s}: {timed(name, b, fn, 1024)}", flush=True)
            G = portcv.asarray(gallery)
            for m in (1, 16):
                q = portcv.asarray(queries[0] if m == 1 else queries)
                fn = lambda: portcv.recognize.nearest(q, G, weights=weights, max_count=378)[0]
                print(f"nearest N=20000 d=11907, {m:2d} queries {name:5s}: {timed(name, b, fn, m)}", flush=True)
            if name == "cupy":  # the two launches apart
                from portcv.recognize._chi_square import check_distance_args, chi_square_kernel

                Q, GG, W, params, _ = check_distance_args(portcv.asarray(queries[0]), G, weights, 378)
                fn = lambda: chi_square_kernel(Q, GG, W, **params)
                print(f"chi_square kernel alone, 1 query  cupy : {timed(name, b, fn)}; "
                      f"gallery {gallery.nbytes / 1e6:.0f} MB", flush=True)
            ref = portcv.to_numpy(portcv.recognize.nearest(portcv.asarray(queries), G, weights=weights, max_count=378)[0])
            print(f"{name}: nearest of 16 queries {ref.ravel().tolist()}", flush=True)


if __name__ == "__main__":
    main()
