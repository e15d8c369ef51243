#!/usr/bin/env bash
# Configures and builds gmemhook into build/ (or $GMEMHOOK_BUILD). Used by the other scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${GMEMHOOK_BUILD:-build}
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)"
