#!/usr/bin/env bash
# One GPU lease, one command: check the GPU path, measure the ensemble's MFU at the paper's
# ladder sizes, then run as many paper-scale intrinsic-dimension validations as `plan`
# (measuring the device) says fit in the time left, each in its own folder so that every one
# started finishes with its report (or, past the time left, is stopped with its measurements
# stored, resumable) and the folders come back as one archive.
#
#   OUT=/tmp/out LIMIT=520 bash bench/device_paper_run.sh            # on a CUDA machine
#   DEVICE=cpu SCALE=smoke OUT=/tmp/out bash bench/device_paper_run.sh  # the script itself, on a CPU
#
# LIMIT: seconds this script may use in all. SPECS: intrinsic-dimension D values in order of
# priority (the paper's D = 4 first). STEPS, if set, overrides the scale's steps. COMPILE=1
# compiles the training step (validate --compile). The
# constructions were decided on a CPU
# (docs/results/2026-12-04-intrinsic-dimension-constructions.md), so only training runs here.
set -u
START=$(date +%s)
LIMIT=${LIMIT:-520}
OUT=${OUT:?set OUT to the folder that comes back}
DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-paper}
SPECS=${SPECS:-4 2 6 3 5}
RUNS=${RUNS:-/tmp/infoflow-runs}
MARGIN=${MARGIN:-1.5} # a spec starts only when MARGIN x its estimate fits in the time left
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$RUNS"
elapsed() { echo $(($(date +%s) - START)); }
log() { echo "[$(elapsed) s] $*" | tee -a "$OUT/summary.txt"; }

if [ "$DEVICE" = cuda ] && [ -d .whl ]; then # the device image lacks pydantic: carried wheels (device README)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 3
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
build_on='validation={"build_on": ["cpu"], "why": "constructions settled on a CPU: docs/results/2026-12-04-intrinsic-dimension-constructions.md"}'

log "start $(date -u +%FT%TZ) on $(hostname); device $DEVICE, scale $SCALE, limit $LIMIT s"
if [ "$DEVICE" = cuda ]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$OUT/summary.txt"
    python3 -m pytest -q -p no:cacheprovider tests/retrieval/test_retrieval_design.py \
        -k "gpu_path or device_path" 2>&1 | tee "$OUT/gpu_test.txt" | tail -3
    [ "${PIPESTATUS[0]}" = 0 ] || { log "the GPU path's test failed: stopping"; exit 3; }
    gpu=--gpu
else
    gpu="--device cpu"
fi
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/summary.txt"
log "bench: the ensemble's MFU at the ladder sizes"
python3 bench/bench_ladder.py --device "$DEVICE" --scale "$SCALE" 2>&1 | tee "$OUT/bench_ladder.txt"

for D in $SPECS; do
    spec=specs/retrieval/intrinsic-dimension-D$D.json
    estimate=$(python3 -m infoflow plan "$spec" --scale "$SCALE" --device "$DEVICE" --set "$build_on" \
        ${STEPS:+--steps $STEPS} --format jsonl | tee "$RUNS/D$D.plan.jsonl" | python3 -c \
        "import json, sys; print(round(json.loads(sys.stdin.readline())['predictions']['estimated_seconds']['value']))")
    left=$((LIMIT - $(elapsed)))
    if python3 -c "import sys; sys.exit(not $MARGIN * $estimate < $left)"; then
        log "D=$D: estimated $estimate s, $left s left: running"
        timeout $((left - 15)) python3 -m infoflow validate "$spec" --scale "$SCALE" $gpu --set "$build_on" \
            ${STEPS:+--steps $STEPS} ${COMPILE:+--compile} --out "$RUNS/D$D" >"$RUNS/D$D.log" 2>&1
        log "D=$D: exit $?, $(tail -1 "$RUNS/D$D.log")"
    else
        log "D=$D: estimated $estimate s, $left s left: not started"
    fi
done
tar czf "$OUT/runs.tgz" --exclude='checkpoints' -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
log "done"
