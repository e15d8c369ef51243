#!/usr/bin/env bash
# Records tests/data/format-v*.tar.gz: tests/data/recorded_program.cpp run on the simulated device
# under the recorder of the last commit that wrote each log format version, so that every old
# format stays readable by test (tests/analyzer/log/recorded_logs_test.cpp, tests/data/README.md).
#
#   scripts/record-fixtures.sh                    every fixture below
#   scripts/record-fixtures.sh 3 format-v8        those of format 3, and format-v8
#
# Each commit is checked out into a scratch worktree under $TMPDIR, and only its hook and its
# simulated device are built there (no samples, no tests); the program is compiled against that
# device. Needs what scripts/build.sh needs, and .deps (scripts/setup.sh) in this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# fixture (format-v<version>[-what])  commit  which recorder that is
FIXTURES=(
  "format-v1                d79147a  the last of format 1 (main after the per-record codecs)"
  "format-v2                2eca913  the last of format 2 (PyTorch block events)"
  "format-v3                a869720  the last of format 3 (the End record's not-recorded tail)"
  "format-v4                1db5e3b  the last of format 4 on main (NvmlSample records; README.md)"
  "format-v5                2f70dc0  the only commit of format 5 (graph fields, NvmlSample records)"
  "format-v6                2241979  the last of format 6 (growing chunks, not sealed)"
  "format-v7                96031ba  the last of format 7 (sealed chunks, version-7 events)"
  "format-v8-no-time-step   2e25e13  the first of format 8 (compact events; time_step_ns still 0)"
  "format-v8                13d245c  format 8 (the header gives the events' time step)"
)

wanted=("$@")
# A fixture is wanted when no argument is given, or one names its version or the fixture itself.
is_wanted() {
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] || [ "$w" = "$2" ] && return 0; done
  return 1
}

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gmemhook-fixtures.XXXXXX")
cleanup() {
  local tree
  for tree in "$SCRATCH"/tree-*; do
    [ -d "$tree" ] && git -C "$ROOT" worktree remove --force "$tree"
  done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# Compiler caches (ccache) see paths relative to the scratch directory, so a second recording of
# the same commits compiles nothing again.
export CCACHE_BASEDIR=$SCRATCH
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
CUDA_INCLUDE=${CUDA_INCLUDE:-/usr/local/cuda/include}

for row in "${FIXTURES[@]}"; do
  read -r name commit _ <<<"$row"
  version=${name#format-v}
  version=${version%%-*}
  is_wanted "$version" "$name" || continue
  tree=$SCRATCH/tree-$name
  echo "== $name: the recorder of $commit"
  git -C "$ROOT" worktree add --detach "$tree" "$commit" >/dev/null
  ln -s "$(readlink -f "$ROOT/.deps")" "$tree/.deps"
  found=$(grep -oP 'kFormatVersion = \K[0-9]+' "$tree/include/gmemhook/format.h")
  if [ "$found" != "$version" ]; then
    echo "record-fixtures: $commit writes format $found, not $version" >&2
    exit 1
  fi

  cmake -S "$tree" -B "$tree/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGMEMHOOK_BUILD_SAMPLES=OFF >"$SCRATCH/cmake-$name.log"
  targets=(gmemhook fakecuda_driver fakecuda_runtime)
  # NVML's fake arrived with format 4; where there is one, the recorder samples it as it would
  # sample nvidia-smi's library.
  grep -q 'add_library(fakenvml' "$tree/tests/fakecuda/CMakeLists.txt" && targets+=(fakenvml)
  cmake --build "$tree/build" -j"$(nproc)" --target "${targets[@]}" >"$SCRATCH/build-$name.log"

  lib=$tree/build/lib
  program=$SCRATCH/$name/recorded_program
  mkdir -p "$SCRATCH/$name/run"
  c++ -std=c++17 -g -O1 -fno-omit-frame-pointer -I"$CUDA_INCLUDE" \
    "$ROOT/tests/data/recorded_program.cpp" -o "$program" -L"$lib/fakecuda" -lcudart -lcuda -pthread
  # A clean environment: no RANK or GMEMHOOK_* of the caller's reaches the log.
  env -i PATH=/usr/bin:/bin GMEMHOOK_OUT="$SCRATCH/$name/run" \
    FAKECUDA_DEVICES=2 FAKECUDA_CAPACITY=1G \
    LD_LIBRARY_PATH="$lib/fakecuda:$lib/fakenvml" LD_PRELOAD="$lib/libgmemhook.so" "$program"

  out=$ROOT/tests/data/$name.tar.gz
  tar -C "$SCRATCH/$name/run" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -cf - . | gzip -9n >"$out"
  echo "   $(stat -c %s "$out") bytes: $out"
done
