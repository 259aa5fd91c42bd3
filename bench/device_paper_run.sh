#!/usr/bin/env bash
# One GPU lease, one command: check the GPU path (and, if asked, time the ensemble's MFU at
# the paper's ladder sizes and chosen groups' steps eagerly against compiled), then run as
# many paper-scale intrinsic-dimension validations as `plan`
# (measuring the device) says fit in the time left, each in its own folder so that every one
# started finishes with its report (or, past the time left, is stopped with its measurements
# stored, resumable) and the folders come back as one archive.
#
#   OUT=/tmp/out LIMIT=520 bash bench/device_paper_run.sh            # on a CUDA machine
#   DEVICE=cpu SCALE=smoke OUT=/tmp/out bash bench/device_paper_run.sh  # the script itself, on a CPU
#
# LIMIT: seconds this script may use in all. SPECS: intrinsic-dimension D values in order of
# priority (the paper's D = 4 first). STEPS, if set, overrides the scale's steps; FIT=1 lowers
# the steps of the first spec that does not fit (to a multiple of 500) until it does.
# COMPILE=1 compiles the training step (plan and validate --compile). COMPILE_BENCH: the D
# values whose group's step is timed eagerly and compiled side by side first (default none);
# LADDER_BENCH=1 measures the ensemble's MFU at the ladder sizes. The constructions were
# decided on a CPU (docs/results/2026-12-04-intrinsic-dimension-constructions.md), so only
# training runs here.
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

. bench/device_env.sh
build_on='validation={"build_on": ["cpu"], "why": "constructions settled on a CPU: docs/results/2026-12-04-intrinsic-dimension-constructions.md"}'

log "start $(date -u +%FT%TZ) on $(hostname); device $DEVICE, scale $SCALE, limit $LIMIT s"
if [ "$DEVICE" = cuda ]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$OUT/summary.txt"
    python3 -m pytest -q -p no:cacheprovider tests/retrieval/test_retrieval_design.py \
        tests/looped_kv/test_looped_kv_validate.py -k "gpu_path or device_path or on_the_gpu" \
        2>&1 | tee "$OUT/gpu_test.txt" | tail -3
    # the fast-loop guard fails a session whose tests take CUDA's start-up CPU time: the verdict
    # here is the tests' own
    grep -qE "[0-9]+ passed" "$OUT/gpu_test.txt" && ! grep -qE "[0-9]+ (failed|error)" "$OUT/gpu_test.txt" ||
        { log "the GPU path's test failed: stopping"; exit 3; }
    gpu=--gpu
else
    gpu="--device cpu"
fi
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/summary.txt"
if [ -n "${LADDER_BENCH:-}" ]; then
    log "bench: the ensemble's MFU at the ladder sizes"
    python3 bench/bench_ladder.py --device "$DEVICE" --scale "$SCALE" 2>&1 | tee "$OUT/bench_ladder.txt"
fi
for D in ${COMPILE_BENCH:-}; do
    log "bench: D=$D's step, eager and compiled"
    python3 bench/bench_compile_step.py specs/retrieval/intrinsic-dimension-D$D.json --scale "$SCALE" \
        --device "$DEVICE" 2>&1 | tee "$OUT/bench_compile_D$D.txt" | tail -3
done

for D in $SPECS; do
    spec=specs/retrieval/intrinsic-dimension-D$D.json
    estimate=$(python3 -m infoflow plan "$spec" --scale "$SCALE" --device "$DEVICE" --set "$build_on" \
        ${STEPS:+--steps $STEPS} ${COMPILE:+--compile} --format jsonl | tee "$RUNS/D$D.plan.jsonl" |
        python3 -c "import json, sys; print(round(json.loads(sys.stdin.readline())['predictions']['estimated_seconds']['value']))")
    left=$((LIMIT - $(elapsed)))
    steps=${STEPS:-} fitted=
    if [ -n "${FIT:-}" ] && python3 -c "import sys; sys.exit(not $MARGIN * $estimate >= $left)"; then
        planned=${STEPS:-$(python3 -c "from infoflow.validators.retrieval.experiment import SCALES; print(SCALES['$SCALE'].settings.steps)")}
        # a step: the compiled one the bench measured (+15% for the target and evaluations)
        # where it ran, else the plan's (MARGIN x); 90 s for the rest (planning, compiling,
        # judging)
        step=$(python3 -c "import re, sys; m = re.search(r'compiled ([0-9.]+) ms/step', open(sys.argv[1]).read()); \
            print(1.15e-3 * float(m[1]) if m and '${COMPILE:-}' else $MARGIN * $estimate / $planned)" \
            "$OUT/bench_compile_D$D.txt" 2>/dev/null || python3 -c "print($MARGIN * $estimate / $planned)")
        steps=$(python3 -c "print(min($planned, int(($left - 25 - 90) / $step) // 500 * 500))" || echo 0)
        estimate=$(python3 -c "print(round(90 + $step * $steps))") fitted=1 FIT=
        log "D=$D: the plan's $planned steps do not fit; $steps steps, about $estimate s ($step s a step)"
    fi
    left=$((LIMIT - $(elapsed)))
    if [ "${steps:-1}" -gt 0 ] && { [ -n "$fitted" ] || python3 -c "import sys; sys.exit(not $MARGIN * $estimate < $left)"; }; then
        log "D=$D: estimated $estimate s, $left s left: running"
        timeout $((left - 15)) python3 -m infoflow validate "$spec" --scale "$SCALE" $gpu --set "$build_on" \
            ${steps:+--steps $steps} ${COMPILE:+--compile} --out "$RUNS/D$D" >"$RUNS/D$D.log" 2>&1
        log "D=$D: exit $?, $(tail -1 "$RUNS/D$D.log")"
    else
        log "D=$D: estimated $estimate s, $left s left: not started"
    fi
done
tar czf "$OUT/runs.tgz" --exclude='checkpoints' -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
log "done"
