#!/usr/bin/env bash
# Proof that a speed change changed no output: runs every report in every format (and `dump`, and
# `diff` between consecutive runs) with two gmemhook binaries on the same run directories and
# compares stdout, stderr and exit status byte for byte.
# Usage: bench/same_reports.sh OLD_GMEMHOOK NEW_GMEMHOOK RUN_DIR...
# Prints one line per difference and "N files compared, M differ"; exit status 1 when any differs.
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 OLD_GMEMHOOK NEW_GMEMHOOK RUN_DIR..." >&2
  exit 2
fi
OLD=$1
NEW=$2
shift 2
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gmemhook-same.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

compared=0
differ=0
# check NAME ARGS...: one command, both binaries.
check() {
  local name=$1
  shift
  for side in old new; do
    local bin=$OLD
    [ $side = new ] && bin=$NEW
    # The binary's own path appears in hints ("hint: /path/gmemhook peak RUN"): name it alike.
    # Only the whole path, as a literal: build/bin/gmemhook is also the start of
    # build/bin/gmemhook_scenario, which scenario runs name.
    "$bin" "$@" >"$OUT/$side.out" 2>"$OUT/$side.err"
    echo "exit $?" >>"$OUT/$side.err"
    local literal
    literal=$(printf '%s' "$bin" | sed 's/[][\\.*^$#]/\\&/g')
    sed -i "s#$literal\([^A-Za-z0-9_.-]\|\$\)#gmemhook\1#g" "$OUT/$side.out" "$OUT/$side.err"
  done
  for stream in out err; do
    compared=$((compared + 1))
    if ! cmp -s "$OUT/old.$stream" "$OUT/new.$stream"; then
      differ=$((differ + 1))
      echo "differs: $name ($stream): gmemhook $*"
    fi
  done
}

previous=
for run in "$@"; do
  base=$(basename "$run")
  for format in text json; do
    check "$base summary $format" summary --format "$format" "$run"
    check "$base fragmentation $format" fragmentation --format "$format" "$run"
  done
  for format in text json folded speedscope; do
    check "$base leaks $format" leaks --format "$format" "$run"
    check "$base peak $format" peak --format "$format" "$run"
  done
  check "$base dump" dump "$run"
  if [ -n "$previous" ]; then
    for format in text json folded; do
      check "$base diff $format" diff --format "$format" "$previous" "$run"
    done
  fi
  previous=$run
done
echo "$compared files compared, $differ differ"
[ "$differ" -eq 0 ]
