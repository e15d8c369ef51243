#!/usr/bin/env bash
# The project's GPU acceptance run. On a machine with an NVIDIA GPU, torch, CuPy and JAX:
#   scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]
# BUILD_DIR holds bin/gmemhook, lib/libgmemhook.so and bin/samples/ (build here with
# scripts/build.sh, or carry a build made elsewhere: the hook and the CLI are self-contained).
# Prints the check table, saves every log and report under OUT_DIR, and writes the results into
# this checkout's docs/verification.md (the section of this kind of machine: scripts/verification.py).
# OUT_DIR.tgz holds the table, results.json, the reports and the pages (files under 4 MiB; not the
# recorded runs): one file to bring back from a GPU machine that returns few files, then
# `scripts/verification.py OUT_DIR` writes the results into docs/verification.md there.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-gpu-check-out}
mkdir -p "$OUT"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1
} | tee "$OUT/versions.txt"
python3 scripts/gpu_check.py --build "$BUILD" --out "$OUT" "${@:3}"
status=$?
python3 scripts/verification.py "$OUT" || echo "gpu-check: docs/verification.md not updated" >&2
(cd "$OUT" && find . -maxdepth 1 -type f -size -4M \( -name '*.md' -o -name '*.txt' -o -name '*.json' \
    -o -name '*.html' -o -name '*.log' \) -print0 | tar czf "../$(basename "$OUT").tgz" --null -T -) ||
  echo "gpu-check: could not write $OUT.tgz" >&2
exit $status
