#!/usr/bin/env bash
# A/B timing of two versions of portcv's source on the CUDA machine, in one device call: runs a
# timing command with this working tree's src/ and with a base copy of src/, alternating (A B A B)
# so drifts of the shared machine show. How a kernel change is judged before its GPU proof.
#   here:   rm -rf .device/base && mkdir -p .device/base && git archive main src | tar -x -C .device/base
#   device: BASE=.device/base bash tools/gpu_ab.sh python3 -m tools.measure kernel-split dcbf
# The command runs in the repository root (python3 -m tools.measure kernel-split, zoom-timing,
# volume-timing, ...: the measurements and the timer come from this tree, portcv from each side); wheels in
# .whl/ are installed first as tools/gpu_check.sh does.
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-.device/base}
[ -d "$BASE/src/portcv" ] || { echo "gpu_ab: no $BASE/src/portcv (see the header)" >&2; exit 1; }
BASE=$(cd "$BASE" && pwd)
# Both sides are timed by this tree's timer: the base's own may differ or predate portcv._timing.
cp src/portcv/_timing.py "$BASE/src/portcv/_timing.py"
SITE=""
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/portcv-site .whl/*.whl || exit 1
  SITE=/tmp/portcv-site:
fi
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
for round in 1 2; do
  for side in "this tree:$PWD/src" "base:$BASE/src"; do
    echo "== round $round, ${side%%:*}"
    (PYTHONPATH="$SITE${side#*:}" "$@") 2>&1 | grep -v Warning
  done
done
