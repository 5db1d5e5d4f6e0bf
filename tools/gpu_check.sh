#!/usr/bin/env bash
# The GPU proof: the whole test suite with --backends numpy,cupy,jax, then the GPU figures.
# Works offline: Python packages missing on the CUDA machine travel as wheels in .whl/, and
# OpenCV's contrib build as an xz-compressed site folder, .whl/cv2site.tar.xz (its wheel is over
# the device tool's carry limit; tools/fetch_gpu_wheels.sh makes both here). Output lands in $OUT
# (or ./gpu-results).
#   bash tools/gpu_check.sh            # tests + benchmarks
#   bash tools/gpu_check.sh tests      # tests only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
WHEELS=${WHEELS:-.whl}  # or .whl-video (tools/fetch_gpu_wheels.sh says what each holds)
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/portcv-site "$WHEELS"/*.whl || exit 1
  for site in "$WHEELS"/cv2site.tar.xz "$WHEELS"/video-site.tar.xz; do
    if [ -f "$site" ]; then tar xJf "$site" -C /tmp/portcv-site || exit 1; fi
  done
  export PYTHONPATH=/tmp/portcv-site:$PWD/src
else
  export PYTHONPATH=$PWD/src
fi
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false PORTCV_HYPOTHESIS_PROFILE=${PORTCV_HYPOTHESIS_PROFILE:-gpu}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import cupy, jax, cv2, numpy; print('cupy', cupy.__version__, 'jax', jax.__version__, jax.devices(), 'cv2', cv2.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/gpu.txt"
status=0
if [ "${1:-all}" != "bench" ]; then
  # PYTEST_ARGS, e.g. "-n 8" (pytest-xdist) to spread the suite over CPU cores.
  python3 -m pytest --backends numpy,cupy,jax -p no:cacheprovider -q -rs ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.txt"
  status=${PIPESTATUS[0]}
fi
if [ "${1:-all}" != "tests" ]; then
  python3 -m tools.measure gpu-profile 2>&1 | tee "$OUT/gpu_profile.txt"
  python3 -m tools.measure gpu-bench --json "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.txt"
fi
tail -n 1 "$OUT/pytest.txt" 2>/dev/null
exit $status
