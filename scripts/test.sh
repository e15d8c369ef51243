#!/usr/bin/env bash
# Builds gmemhook and runs every test that needs no GPU (ctest label `gpu` excluded).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir "${GMEMHOOK_BUILD:-build}" -LE gpu --output-on-failure -j"$(nproc)" "$@"
