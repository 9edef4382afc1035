#!/usr/bin/env bash
# One prepared check for a GPU machine (about 5-8 minutes; installs nothing, reaches nothing outside):
#   1. nanoGPT's GPU Shakespeare recipe (6L 6H 384, ctx 256, batch 64, dropout 0.2), 1000 steps per setting:
#      ms/iter, tokens/s, achieved TFLOP/s, val loss (benchmarks/bench_gpu.py);
#   2. the CUDA-marked tests (the KV cache against a full forward on the GPU, GPU training against the CPU's);
#   3. generation with and without the KV cache on the GPU (benchmarks/bench_generate.py).
# Uses the machine's python3 (CUDA torch) with this checkout's src/ first. Tiny Shakespeare is looked for at
# $ATTNLAB_DATA, shared/data/... (inside or beside the checkout).
#   bash benchmarks/gpu_check.sh
#   ATTNLAB_GPU_DRY=1 bash benchmarks/gpu_check.sh    # a tiny CPU run of the same script, to see it works
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
DRY=${ATTNLAB_GPU_DRY:-0}
status=0

data=""
for candidate in "${ATTNLAB_DATA:-}" shared/data/tinyshakespeare/input.txt ../shared/data/tinyshakespeare/input.txt \
                 ../../shared/data/tinyshakespeare/input.txt; do
  if [ -n "$candidate" ] && [ -f "$candidate" ]; then data=$candidate; break; fi
done
if [ -z "$data" ]; then
  echo "gpu_check: Tiny Shakespeare's input.txt not found (set ATTNLAB_DATA=path/to/input.txt)" >&2
  exit 2
fi

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'GPU:', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
echo "== 1. training speed and val loss per setting ($data)"
if [ "$DRY" = 1 ]; then
  timeout 300 "$PY" benchmarks/bench_gpu.py --data "$data" --settings fp32,bf16 || status=1
else
  timeout 390 "$PY" benchmarks/bench_gpu.py --data "$data" || status=1
fi

echo "== 2. CUDA-marked tests"
if "$PY" -c "import pytest" 2>/dev/null; then
  timeout 120 "$PY" -m pytest -q -m cuda tests/test_speed.py -p no:cacheprovider -rs
  rc=$?
  # 5: nothing selected; in a dry run on a machine without a GPU every CUDA test skips, which is the point
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi
else
  echo "pytest is not installed for $PY: CUDA-marked tests not run" >&2
  status=1
fi

echo "== 3. generation with and without the KV cache"
if [ "$DRY" = 1 ]; then
  echo "(dry run: skipped, 1024 tokens uncached take long on a CPU)"
else
  timeout 120 "$PY" benchmarks/bench_generate.py --device cuda || status=1
fi
exit $status
