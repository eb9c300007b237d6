#!/usr/bin/env bash
# The GPU machine's whole run, in one call of the device tool (docs/gpu.md): install the wheels
# that tools/gpu_prepare.py put in $WHEELS (default .gpu_wheels; there is no package index
# there), build this tree, then the phases named in PHASES (default ABC):
#   A. gpu_check with the presets as they are: the CUDA tests, every env in float32;
#   B. gpu_check against PufferLib 3.0, built from its sdist and timed on the same card (its
#      presets and ours), ours at its env counts (8192 agents: squared, breakout, cartpole;
#      snake at our preset), float32 as PufferLib's presets;
#   C. torch's profiler on two epochs of squared and breakout at 8192 agents;
#   D. how far the rate scales: squared and breakout at 32768 agents, float32 and bfloat16;
#   P. `bench learn Pong`: ours and SB3 with the zoo's settings, each on the card its preset
#      picks (CUDA), at the same time (in sequence they would not fit one call): PONG_STEPS
#      agent steps each (default 600000), a run past PONG_LIMIT seconds (default 440) is
#      killed and keeps the returns it logged; pong.md is the merged table;
#   L. does ours learn Atari: gym:ALE/Breakout-v5 at its preset and gym:ALE/Pong-v5 at 32 envs
#      (the preset's other settings), at the same time, each cut at LEARN_SECONDS (default
#      200); their metrics.jsonl come back as breakout.jsonl and pong32.jsonl.
# Results land in $OUT: gpu/ (json, md, cuda_tests.log), gpu_peer/ and gpu_scale/ (json and
# md each), profile.txt, run.log and logs.tar.gz (the peer's build and run logs). The device
# tool brings back 8 files: PHASES=ABC fills them; run D with B (or alone) in another call.
#   bash tools/gpu_run.sh
# PHASES; SKIP_INSTALL=1 on a machine that has it installed; DEVICE=cpu and PYTHON=... for a
# dry run here; BUDGET_A, BUDGET_B, BUDGET_D: each gpu_check's budget in seconds.
set -u -o pipefail
export PYTHONUNBUFFERED=1
# the image's own pytest plugins were built for its pytest, not the one the wheels bring
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
OUT=${OUT:?set OUT to the folder that comes back}
P=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
PHASES=${PHASES:-ABC}
WHEELS=${WHEELS:-.gpu_wheels}
WORK=$(mktemp -d)
LOG=$OUT/run.log
say() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }
check() { $P -m puffer_tui.benchmarks.gpu_check --device "$DEVICE" --rounds 3 --seconds 2 "$@" 2>&1 | tee -a "$LOG"; }
AT_PEER=(--set-env squared:vec.num_envs=8192 --set-env squared:train.minibatch_size=32768
         --set-env breakout:vec.num_envs=8192 --set-env breakout:train.minibatch_size=32768
         --set-env cartpole:vec.num_envs=8192 --set-env cartpole:train.minibatch_size=32768)

say "start on $(hostname): $(nproc) cores; $($P -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,utilization.gpu --format=csv 2>&1 | tee -a "$LOG"

if [ -z "${SKIP_INSTALL:-}" ]; then
  say "install: wheels"
  $P -m pip install -q --no-index --no-cache-dir --find-links "$WHEELS" "$WHEELS"/*.whl >>"$LOG" 2>&1 \
    || { say "FAILED: installing the wheels (see run.log)"; exit 1; }
  say "install: this tree (its C extensions are built here)"
  $P -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir . >>"$LOG" 2>&1 \
    || { say "FAILED: building this tree (see run.log)"; exit 1; }
fi
if [[ $PHASES == *A* ]]; then
  say "phase A: the CUDA tests, the presets as they are"
  check --out "$OUT/gpu" --precisions float32 --budget "${BUDGET_A:-200}" --case-timeout 60 \
    --work "$WORK/a"
fi
if [[ $PHASES == *B* ]]; then
  say "phase B: against PufferLib, at its env counts"
  check --out "$OUT/gpu_peer" --envs squared,breakout,cartpole,snake --precisions float32 \
    --no-tests --budget "${BUDGET_B:-300}" --case-timeout 45 "${AT_PEER[@]}" \
    --peer-dir "$WHEELS" --work "$WORK/b"
fi
if [[ $PHASES == *C* ]]; then
  for env in squared breakout; do
    say "phase C: profile $env"
    timeout 40 $P -m puffer_tui.benchmarks.gpu_profile "$env" --out "$WORK/profile-$env.txt" \
      --epochs 2 --set train.device="$DEVICE" --set vec.num_envs=8192 \
      --set train.minibatch_size=32768 2>&1 | grep -v '^USDT' | tee -a "$LOG"
    cat "$WORK/profile-$env.txt" >>"$OUT/profile.txt" 2>/dev/null
  done
fi
if [[ $PHASES == *D* ]]; then
  say "phase D: 32768 agents"
  check --out "$OUT/gpu_scale" --envs squared,breakout --precisions float32,bfloat16 \
    --no-tests --budget "${BUDGET_D:-90}" --case-timeout 40 --set vec.num_envs=32768 \
    --set train.minibatch_size=65536 --work "$WORK/d"
fi
if [[ $PHASES == *P* ]]; then
  say "phase P: Pong, ours and SB3-zoo learning at the same time on this machine"
  bench=($P -m puffer_tui.app.cli bench learn Pong --seeds 1 --steps "${PONG_STEPS:-600000}"
         --run-timeout "${PONG_LIMIT:-440}")
  "${bench[@]}" --side ours --json "$OUT/pong_ours.json" --work-dir "$WORK/pong_ours" \
    >"$OUT/pong_ours.log" 2>&1 &
  "${bench[@]}" --side sb3 --json "$OUT/pong_sb3.json" --work-dir "$WORK/pong_sb3" \
    >"$OUT/pong_sb3.log" 2>&1 &
  wait
  $P -m puffer_tui.app.cli bench learn --report "$OUT/pong_ours.json" \
    --report "$OUT/pong_sb3.json" >"$OUT/pong.md" 2>&1
  cat "$OUT/pong.md" | tee -a "$LOG"
fi
if [[ $PHASES == *L* ]]; then
  say "phase L: Breakout at its preset and Pong at 32 envs, ${LEARN_SECONDS:-200} s each"
  train=(timeout -s INT "${LEARN_SECONDS:-200}" $P -m puffer_tui.app.cli train --headless)
  "${train[@]}" gym:ALE/Breakout-v5 --runs-dir "$WORK/breakout" \
    --train.total-timesteps 400000 >"$WORK/breakout.log" 2>&1 &
  "${train[@]}" gym:ALE/Pong-v5 --runs-dir "$WORK/pong32" --vec.num-envs 32 \
    --train.total-timesteps 1500000 >"$WORK/pong32.log" 2>&1 &
  wait
  for run in breakout pong32; do
    tail -n 14 "$WORK/$run.log" | tee -a "$LOG"
    cp "$WORK/$run"/*/metrics.jsonl "$OUT/$run.jsonl"
  done
fi
(cd "$WORK" && find . -name '*.log' -print0 | tar czf "$OUT/logs.tar.gz" --null -T -)
say "done"
