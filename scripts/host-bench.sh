#!/usr/bin/env bash
# The CPU-side benchmarks of docs/performance.md in one go, for a quiet machine: the GPU
# machine's host (a VM of its own; the development machine is shared, and one process to the
# next moves ±20 % there).
#   scripts/host-bench.sh DIST OUT [BASE_DIST]
# DIST is what scripts/make-dist.sh makes (the hook, the CLI, hook_bench, analyzer_bench, the
# simulated device, heaptrack packed under peers/). BASE_DIST, optional, holds another build's
# lib/libgmemhook.so and bin/gmemhook: a before/after in the same rounds. Runs:
#   1. bench/run_hook_bench.sh (the hook next to heaptrack at 8/32/64 frames): the
#      separate-process table, then the paired one, each process's figure taken inside itself
#      (traced against direct windows); BASE_DIST's hook is paired in processes of its own,
#      interleaved with this build's (two hooks cannot share a process: both export the same names);
#   2. bench/run_reader_bench.sh (gmemhook summary next to heaptrack_print on that loop's logs);
#      BASE_DIST's CLI in the same rounds;
#   3. analyzer_bench on the synthetic run (2 M events, 8 threads), then the whole
#      `gmemhook summary` command on it, pinned to one core, interleaved with BASE_DIST's.
# Everything printed is also saved under OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=$(cd "${1:?usage: scripts/host-bench.sh DIST OUT [BASE_DIST]}" && pwd)
OUT=${2:?usage: scripts/host-bench.sh DIST OUT [BASE_DIST]}
BASE=${3:+$(cd "$3" && pwd)}
# A base without both binaries would only print nonsense figures next to this build's.
for f in ${BASE:+"$BASE/lib/libgmemhook.so" "$BASE/bin/gmemhook"}; do
  [ -f "$f" ] || { echo "host-bench: BASE_DIST lacks $f" >&2; exit 2; }
done
# PARTS (default "hook reader synthetic") picks which of the three run, e.g. PARTS=synthetic
# SUMMARY_REPS=31 for more rounds of the synthetic run's whole command alone.
# The synthetic run and its whole commands run on one core: the last one, the core
# torch_loop_bench.py pins its children to; CORE=N picks another.
CORE=${CORE:-$(( $(nproc) - 1 ))}
mkdir -p "$OUT"
[ -d "$DIST/peers/bin" ] && export PATH="$DIST/peers/bin:$PATH"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  lscpu | grep -E 'Model name|^CPU\(s\)|MHz' || true
  uptime
  echo "heaptrack: $(command -v heaptrack || echo none)"
} | tee "$OUT/machine.txt"

PARTS=" ${PARTS:-hook reader synthetic} "
wanted() { [[ "$PARTS" == *" $1 "* ]]; }

if wanted hook; then
  echo "== hook next to heaptrack (bench/run_hook_bench.sh, REPS=${HOOK_REPS:-15})" | tee "$OUT/hook.txt"
  REPS=${HOOK_REPS:-15} BASE_HOOK=${BASE:+$BASE/lib/libgmemhook.so} bench/run_hook_bench.sh "$DIST" |
    tee -a "$OUT/hook.txt"
fi

if wanted reader; then
  echo "== reader next to heaptrack_print (bench/run_reader_bench.sh)" | tee "$OUT/reader.txt"
  REPS=${READER_REPS:-5} BASE=${BASE:+$BASE/bin/gmemhook} bench/run_reader_bench.sh "$DIST" |
    tee -a "$OUT/reader.txt"
fi
wanted synthetic || exit 0

SYN=$(mktemp -d)
EVENTS=2000000  # the synthetic run; its events/s below are worked out from it
trap 'rm -rf "$SYN"' EXIT
echo "== synthetic run (analyzer_bench --events $EVENTS, pinned to core $CORE)" | tee "$OUT/synthetic.txt"
taskset -c "$CORE" "$DIST/bin/analyzer_bench" --events "$EVENTS" --repeat 5 --dir "$SYN/run" --keep |
  tee -a "$OUT/synthetic.txt"
# The whole command's CPU seconds (summary_cpu), the core's clock before each round (core_clock),
# and the rounds' medians (rounds_stats).
source scripts/summary-rounds.sh
this="" base="" clocks=""
for _ in $(seq "${SUMMARY_REPS:-15}"); do
  clocks+="$(core_clock) "
  t=$(summary_cpu "$DIST/bin/gmemhook") || exit 1
  this+="$t "
  [ -z "$BASE" ] || { t=$(summary_cpu "$BASE/bin/gmemhook") || exit 1; base+="$t "; }
done
{
  echo "gmemhook summary, whole command, $EVENTS events, one core: $(rounds_stats <<<"$this")"
  [ -z "$BASE" ] || echo "base build, same rounds:                            $(rounds_stats <<<"$base")"
} | tee -a "$OUT/synthetic.txt"
echo "core $CORE's clock before each round (GHz, bench/clock_probe): $clocks" | tee -a "$OUT/synthetic.txt"
[ -n "$BASE" ] || exit 0
# The host's cores run this command in two states, ~0.21 and ~0.30 s for one build (twelve
# interleaved rounds of three settings put the fast runs together at the start and the end,
# whatever the setting: the host's state, not the program's). The base measures the state of each
# round: the rounds where it ran within 15 % of its fastest are the uncontended ones, and this
# build's figure in those rounds is its figure in that state. Printed beside the medians above,
# never instead of them.
# synthetic-rounds.txt: this build's CPU seconds, the base's, the clock, one round a line.
paste -d' ' <(tr ' ' '\n' <<<"$this" | grep .) <(tr ' ' '\n' <<<"$base" | grep .) \
  <(tr ' ' '\n' <<<"$clocks" | grep .) >"$OUT/synthetic-rounds.txt"
low=$(cut -d' ' -f2 "$OUT/synthetic-rounds.txt" | sort -g | head -1)
fast=$(awk -v low="$low" '$2 <= low * 1.15' "$OUT/synthetic-rounds.txt")
{
  printf 'rounds where the base ran within 15 %% of its fastest (uncontended host): %d of %d\n' \
    "$(grep -c . <<<"$fast")" "$(grep -c . "$OUT/synthetic-rounds.txt")"
  echo "  this build in those rounds: $(cut -d' ' -f1 <<<"$fast" | rounds_stats)"
  echo "  base build in those rounds: $(cut -d' ' -f2 <<<"$fast" | rounds_stats)"
} | tee -a "$OUT/synthetic.txt"
