#!/usr/bin/env bash
# Whether `plan` estimates the icl_markov and looped_kv stacks' training time on a device:
# for each spec, `plan --steps N` there (on a CUDA machine it measures the device's generic
# step-time model), then `validate --steps N --seeds 1`, and a table of estimated against
# measured seconds (report.json's throughput). The plans, logs, reports and the step-time
# cache come back as $OUT/step_times.tgz.
#
#   OUT=/tmp/out bash bench/device_step_times.sh               # on a CUDA machine
#   DEVICE=cpu OUT=/tmp/out bash bench/device_step_times.sh    # the script itself, on a CPU
#
# RUNS: "spec:steps" pairs; TIMEOUT: seconds each validate may take.
set -u
OUT=${OUT:?set OUT to the folder that comes back}
DEVICE=${DEVICE:-cuda}
RUNS=${RUNS:-specs/icl_markov/race-c3-quick.json:300 specs/looped_kv/tiny-looped.json:200}
TIMEOUT=${TIMEOUT:-70}
WORK=${WORK:-/tmp/infoflow-step-times}
export PYTHONUNBUFFERED=1 INFOFLOW_CACHE="$WORK/cache"
mkdir -p "$OUT" "$WORK"
. bench/device_env.sh
[ "$DEVICE" = cuda ] && train=--gpu || train="--device cpu"

for run in $RUNS; do
    spec=${run%:*} steps=${run##*:} name=$(basename "${run%:*}" .json)
    python3 -m infoflow plan "$spec" --device "$DEVICE" --steps "$steps" --seeds 1 --format jsonl \
        >"$WORK/$name.plan.jsonl" 2>"$WORK/$name.plan.err"
    rm -rf "$WORK/$name"
    timeout "$TIMEOUT" python3 -m infoflow validate "$spec" $train --steps "$steps" --seeds 1 \
        --out "$WORK/$name" >"$WORK/$name.log" 2>&1
    echo "$name: validate exit $?" | tee -a "$OUT/step_times.txt"
done
python3 - "$WORK" $RUNS <<'EOF' | tee -a "$OUT/step_times.txt"
import json, pathlib, sys

work = pathlib.Path(sys.argv[1])
print(f"{'spec':<22} {'steps':>6} {'estimated s':>12} {'measured s':>11} {'measured/est':>13}")
for run in sys.argv[2:]:
    spec, steps = run.rsplit(":", 1)
    name = pathlib.Path(spec).stem
    lines = (work / f"{name}.plan.jsonl").read_text().splitlines()
    if not lines:
        print(f"{name:<22} {steps:>6}  plan failed: see {name}.plan.err")
        continue
    plan = json.loads(lines[0])
    estimated = plan["predictions"]["estimated_seconds"]["value"]
    report = work / name / "report.json"
    throughput = json.loads(report.read_text())["throughput"] if report.is_file() else {}
    measured = sum(t["seconds"] or 0 for t in throughput.values())
    ratio = f"{measured / estimated:.2f}" if measured and estimated else "-"
    shown = f"{measured:.1f}" if throughput else "none"  # a run that trained nothing
    print(f"{name:<22} {steps:>6} {estimated:>12.1f} {shown:>11} {ratio:>13}")
    print(" ", next((m.strip() for m in plan["messages"] if "step time" in m), "step time: ?"))
EOF
tar czf "$OUT/step_times.tgz" --exclude='checkpoints' -C "$(dirname "$WORK")" "$(basename "$WORK")"
