#!/usr/bin/env bash
# The GPU machine's whole run, in one call of the device tool (docs/gpu.md): install the wheels
# that tools/gpu_prepare.py put in .gpu_wheels (there is no package index there), build this
# tree, then
#   A. gpu_check with the presets as they are: the CUDA tests, every env in float32, and
#      PufferLib 3.0 built from its sdist and timed on the same card (its presets and ours);
#   B. gpu_check at PufferLib's env counts for squared and breakout (8192 agents, minibatches
#      of 32768), float32 and bfloat16: our rate where the card, not a CPU preset, sets it;
#   C. torch's profiler on two epochs of each of those two (host and device time by op).
# Results land in $OUT (the device tool brings back 8 files): gpu/ and gpu8k/ (json, md),
# gpu/cuda_tests.log, profile.txt, run.log and logs.tar.gz (the peer's build and run logs).
#   bash tools/gpu_run.sh
# PHASE_A, PHASE_B: each gpu_check's budget in seconds; SKIP_INSTALL=1 on a machine that has
# it installed; DEVICE=cpu and PYTHON=... for a dry run here.
set -u -o pipefail
export PYTHONUNBUFFERED=1
# the image's own pytest plugins were built for its pytest, not the one the wheels bring
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
OUT=${OUT:?set OUT to the folder that comes back}
P=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
WORK=$(mktemp -d)
LOG=$OUT/run.log
say() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }

say "start on $(hostname): $(nproc) cores; $($P -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,utilization.gpu --format=csv 2>&1 | tee -a "$LOG"

if [ -z "${SKIP_INSTALL:-}" ]; then
  say "install: wheels"
  $P -m pip install -q --no-index --no-cache-dir --find-links .gpu_wheels .gpu_wheels/*.whl >>"$LOG" 2>&1 \
    || { say "FAILED: installing the wheels (see run.log)"; exit 1; }
  say "install: this tree (its C extensions are built here)"
  $P -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir . >>"$LOG" 2>&1 \
    || { say "FAILED: building this tree (see run.log)"; exit 1; }
fi
say "phase A: the presets as they are, the CUDA tests, the peer"
$P -m puffer_tui.benchmarks.gpu_check --out "$OUT/gpu" --device "$DEVICE" --precisions float32 \
  --rounds 3 --seconds 2 --budget "${PHASE_A:-320}" --case-timeout 60 --peer-dir .gpu_wheels \
  --work "$WORK/a" 2>&1 | tee -a "$LOG"
say "phase B: PufferLib's env counts"
$P -m puffer_tui.benchmarks.gpu_check --out "$OUT/gpu8k" --device "$DEVICE" \
  --envs squared,breakout --precisions float32,bfloat16 --rounds 3 --seconds 2 \
  --budget "${PHASE_B:-80}" --case-timeout 40 --no-tests --set vec.num_envs=8192 \
  --set train.minibatch_size=32768 --work "$WORK/b" 2>&1 | tee -a "$LOG"
for env in squared breakout; do
  say "phase C: profile $env"
  timeout 40 $P -m puffer_tui.benchmarks.gpu_profile "$env" --out "$WORK/profile-$env.txt" \
    --epochs 2 --set train.device="$DEVICE" --set vec.num_envs=8192 \
    --set train.minibatch_size=32768 2>&1 | grep -v '^USDT' | tee -a "$LOG"
  cat "$WORK/profile-$env.txt" >>"$OUT/profile.txt" 2>/dev/null
done
(cd "$WORK" && find . -name '*.log' -print0 | tar czf "$OUT/logs.tar.gz" --null -T -)
say "done"
