#!/usr/bin/env bash
# The asv suite on the offline CUDA machine, saved as results of the commit it was given, copied
# to $OUT (default ./gpu-results) for committing under asv_bench/results/<machine>/.
#
# The CUDA machine gets a copy of the working tree WITHOUT .git and has no network. Bring:
#   .device/portcv.bundle   the history: git bundle create .device/portcv.bundle main
#   .whl/*.whl              what its image lacks (tools/fetch_gpu_wheels.sh: asv, asv-runner, ...)
# then, on it:
#   bash tools/gpu_asv.sh
# and, back here (docs/benchmarks.md, "GPU results"):
#   cp -r <OUT>/results/. asv_bench/results/ && git add asv_bench/results
#
# What it does: installs the wheels into a --target folder, clones the bundle into a temp dir
# (asv's --set-commit-hash needs the commit in a git repository), writes the asv machine file
# (machine "h100", the GPU's name in its "cpu" field), then runs the suite in steps of ASV_CHUNK
# benchmark classes (tools/asv_steps.py), each step one `asv run -E existing` whose results are
# copied to $OUT as soon as it ends: asv saves only when a run ends, so a step cut off by the
# deadline loses only its few classes. NumPy's parameter values are left out (ASV_SKIP): the
# host's NumPy is recorded on the CPU machine, and on this host it takes most of the time.
# Steps not reached are listed as SKIPPED; run again with ASV_STEPS="..." after copying the
# results into asv_bench/results/<machine>/ (they are carried in and extended).
# Timing is trimmed to fit the device budget (-a rounds=1 -a repeat=(2,5,0.2)): fewer samples
# than asv's default, the same measurement.
#
# Environment (all optional):
#   OUT               where results go (default ./gpu-results)
#   ASV_MACHINE       asv machine name, the results folder (default: the card's model, e.g. h100
#                     or h200, so results of different cards never share one history)
#   BUNDLE, BRANCH    the bundle (default .device/portcv.bundle) and its branch (default main)
#   PYTHON            interpreter with CuPy and JAX (default python3)
#   ASV_DEADLINE_S    stop starting steps after this many seconds of the script (default 330)
#   ASV_BENCH         one regex instead of the steps (e.g. 'GaussianBlur\.time_')
#   ASV_ATTRS         asv -a overrides (default "rounds=1 repeat=(2,5,0.2) warmup_time=0.02")
#   ASV_STEPS         only these step numbers, e.g. "4 5" (the list is printed at the start)
#   ASV_CHUNK         benchmark classes per step (default 4)
#   ASV_SKIP          first parameter values left out, comma-separated (default numpy; "" for none)
#   ASV_MISSING=1     only the benchmark classes with no result yet in asv_bench/results/<machine>/
#   STRICT=1          fail if src/ or asv_bench/benchmarks/ differ from the bundle's commit
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
MODEL=$(printf %s "${GPU%%,*}" | grep -oiE '\b(G[HB][0-9]{3}|[ABHL][0-9]{2,3}S?)\b' | head -n 1 | tr 'A-Z' 'a-z')
MACHINE=${ASV_MACHINE:-${MODEL:-gpu}}
BUNDLE=${BUNDLE:-$ROOT/.device/portcv.bundle}
BRANCH=${BRANCH:-main}
PY=$(command -v "${PYTHON:-python3}") || { echo "gpu_asv: no ${PYTHON:-python3}" >&2; exit 1; }
DEADLINE_S=${ASV_DEADLINE_S:-330}
CHUNK=${ASV_CHUNK:-4}
read -r -a ATTR_LIST <<< "${ASV_ATTRS:-rounds=1 repeat=(2,5,0.2) warmup_time=0.02}"
ATTRS=()
for a in "${ATTR_LIST[@]}"; do ATTRS+=(-a "$a"); done
START=$SECONDS
WORK=$(mktemp -d /tmp/portcv-asv.XXXXXX)
LOG=$OUT/gpu_asv.log
: > "$LOG"
log() { echo "[gpu_asv +$((SECONDS - START))s] $*" | tee -a "$LOG"; }

# ---- 1. packages: the wheels brought along, portcv from this working tree ---------------------
SITE=""
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl \
    || { log "installing .whl/*.whl failed"; exit 1; }
  SITE=$WORK/site:
fi
export PYTHONPATH="$SITE$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export ASV_PYTHONPATH=$PYTHONPATH          # asv drops PYTHONPATH from the benchmark processes
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
"$PY" -c "import asv, asv_runner, portcv" 2>&1 | tee -a "$LOG"
[ "${PIPESTATUS[0]}" = 0 ] || { log "asv, asv_runner or portcv cannot be imported (wheels missing from .whl/?)"; exit 1; }
ASV=("$PY" -m asv)

# ---- 2. a git repository holding the commit ----------------------------------------------------
command -v git > /dev/null || { log "git is not installed"; exit 1; }
[ -f "$BUNDLE" ] || { log "no bundle at $BUNDLE (git bundle create .device/portcv.bundle main)"; exit 1; }
git clone -q --branch "$BRANCH" "$BUNDLE" "$WORK/repo" 2>&1 | tee -a "$LOG"
COMMIT=$(git -C "$WORK/repo" rev-parse --verify -q HEAD) || { log "cloning $BUNDLE (branch $BRANCH) failed"; exit 1; }
log "commit $COMMIT ($(git -C "$WORK/repo" log -1 --format='%ad %s' --date=short))"
# Is this working tree that commit? (benchmarks import portcv from $ROOT/src)
git --git-dir="$WORK/repo/.git" --work-tree="$ROOT" status --porcelain --untracked-files=all \
  -- src asv_bench/benchmarks > "$OUT/tree_vs_commit.txt" 2>&1
if [ -s "$OUT/tree_vs_commit.txt" ]; then
  log "WARNING: src/ or asv_bench/benchmarks/ differ from $COMMIT; results are labelled $COMMIT anyway:"
  head -20 "$OUT/tree_vs_commit.txt" | tee -a "$LOG"
  [ "${STRICT:-0}" = 1 ] && exit 1
fi

# ---- 3. asv configuration for this run: the clone as repo, results in $WORK --------------------
"$PY" - "$ROOT" "$WORK" <<'EOF' || { log "writing the asv configuration failed"; exit 1; }
import json, sys
from asv import util
root, work = sys.argv[1], sys.argv[2]
conf = util.load_json(f"{root}/asv_bench/asv.conf.json", js_comments=True)
conf.update(repo=f"{work}/repo", benchmark_dir=f"{root}/asv_bench/benchmarks", results_dir=f"{work}/results",
            html_dir=f"{work}/html", env_dir=f"{work}/env")
with open(f"{work}/asv.conf.json", "w") as f:
    json.dump(conf, f, indent=1)
EOF
CONF=$WORK/asv.conf.json

# ---- 4. the machine: `asv machine --yes --machine NAME` stores only the fields that differ from
# its defaults, so write the entry with asv's own API: defaults + the GPU in the "cpu" field ------
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
"$PY" - "$MACHINE" "${GPU:-no GPU}" <<'EOF' 2>&1 | tee -a "$LOG"
import sys
from asv.machine import Machine, MachineCollection
name, gpu = sys.argv[1], sys.argv[2]
info = Machine.get_defaults()
gpu_name, _, driver = gpu.partition(",")
info.update(machine=name, cpu=f"{info['cpu']}; GPU: {gpu_name.strip()}" + (f" (driver {driver.strip()})" if driver else ""))
MachineCollection.save(name, info)
print("asv machine:", info)
EOF
"$PY" -c "import cupy, jax; print('cupy', cupy.__version__, 'jax', jax.__version__, jax.devices())" 2>&1 | tail -n 1 | tee -a "$LOG"

# ---- 5. the runs ---------------------------------------------------------------------------------
# Results of this commit already in asv_bench/results/$MACHINE/ (an earlier, partial run copied
# back) are carried in: asv adds to a results file, so a second run with ASV_STEPS="4 5" extends it.
mkdir -p "$WORK/results/$MACHINE"
for f in "asv_bench/results/$MACHINE/${COMMIT:0:8}"-*.json; do
  [ -f "$f" ] && cp "$f" "$WORK/results/$MACHINE/" && log "extending $f"
done
STEPS=()   # "label|regex" (the regex may contain '|')
if [ -n "${ASV_BENCH:-}" ]; then
  STEPS+=("custom|$ASV_BENCH")
else
  while IFS= read -r step; do STEPS+=("$step"); done < <("$PY" tools/asv_steps.py "$CHUNK" "${ASV_SKIP-numpy}" \
    "$([ "${ASV_MISSING:-0}" = 1 ] && echo "$MACHINE")")
fi
for i in "${!STEPS[@]}"; do log "step $((i + 1)): ${STEPS[i]%%|*}"; done
read -r -a ONLY <<< "${ASV_STEPS:-}"

copy_back() {
  mkdir -p "$OUT/results/$MACHINE"
  compgen -G "$WORK/results/$MACHINE/*.json" > /dev/null || return 0
  cp "$WORK/results/$MACHINE"/*.json "$OUT/results/$MACHINE/"
  cp "$WORK/results/benchmarks.json" "$OUT/results/" 2>/dev/null
}

status=0
for i in "${!STEPS[@]}"; do
  step=${STEPS[i]}
  label=${step%%|*}
  if [ ${#ONLY[@]} -gt 0 ] && [[ " ${ONLY[*]} " != *" $((i + 1)) "* ]]; then
    continue
  fi
  regex="${step#*|}"   # everything after the label: one regex (it may contain '|' itself)
  left=$((DEADLINE_S - (SECONDS - START)))
  if [ "$left" -lt 30 ]; then
    log "SKIPPED (deadline ${DEADLINE_S}s): $label"
    status=3
    continue
  fi
  slug=$(printf %s "$label" | tr -c 'A-Za-z0-9' '_' | cut -c1-40)
  log "step '$label' (at most ${left}s): asv run --bench '$regex'"
  timeout --signal=TERM --kill-after=15 "$left" \
    "${ASV[@]}" --config "$CONF" run -E "existing:$PY" --set-commit-hash "$COMMIT" --machine "$MACHINE" \
    --bench "$regex" "${ATTRS[@]}" --show-stderr > "$OUT/asv_$slug.log" 2>&1
  rc=$?
  tail -n 3 "$OUT/asv_$slug.log" | tee -a "$LOG"
  case $rc in
    0) log "step '$label' done" ;;
    124|137) log "step '$label' CUT OFF at the deadline: its results are lost"; status=3 ;;
    *) log "step '$label' exited $rc (failed benchmarks are recorded as failed; see asv_$slug.log)"; [ $status = 0 ] && status=2 ;;
  esac
  copy_back   # after every step: the device call may end before the script does
done

# ---- 6. what came back ---------------------------------------------------------------------------
if compgen -G "$OUT/results/$MACHINE/*.json" > /dev/null; then
  log "results: $(ls "$OUT/results/$MACHINE" | tr '\n' ' ')"
  "$PY" - "$OUT/results/$MACHINE" <<'EOF' 2>&1 | tee -a "$LOG"
import glob, json, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    if path.endswith("machine.json"):
        continue
    data = json.load(open(path))
    results = data.get("results", {})
    print(f"{path}: {len(results)} benchmarks, commit {data.get('commit_hash', '?')[:12]}")
EOF
else
  log "no results were saved"
  status=1
fi
log "done in $((SECONDS - START))s; exit $status (0 all steps ran, 2 a step reported failures, 3 steps skipped or cut off)"
exit $status
