#!/usr/bin/env bash
# Hook overhead on the simulated device, next to heaptrack's on the same loop: at stack
# depths 8, 32, 64, hook_bench makes cudaMalloc+cudaFree pairs plain and under libgmemhook.so, and
# malloc+free pairs plain and under heaptrack, REPS (default 5) rounds, interleaved so that load
# from other processes hits every mode alike; medians. Prints ns added per event (a pair is two
# events) two ways: by the loop's own clock, the measure the target is set in (gmemhook's share of
# heaptrack's: target ≤ 0.25 at 32 frames), and in CPU time (user + system) of every process the
# recorder runs — heaptrack hands its stacks to heaptrack_interpret — at the margin: each mode
# also runs PAIRS/10 pairs and the difference leaves start-up and exit out (10 ms resolution, so
# a rough figure for heaptrack, whose exit work varies). And a third way, the steadiest on a
# loaded machine: the CPU time of the loop's own thread (hook_bench measures it), which leaves
# out time spent waiting for a core and heaptrack_interpret's process; that is the cost the
# traced thread itself pays. And what NVML sampling adds (with the fake libnvidia-ml.so.1, the
# hook's side of it; run_torch_loop_bench.sh measures the real one).
# Without heaptrack on PATH its columns read "-". BASE_HOOK=/path/to/another/libgmemhook.so adds
# that build as one more mode in the same rounds (a before/after of a change, interleaved) and
# prints its thread figures after the table.
# Then the paired table, figures the process's own speed can scale but not add to (between
# processes it added up to ±40 ns on the GPU machine's host): each process times
# the traced call against the same call made past the preload, in alternating windows (hook_bench
# modes paired / paired-malloc: WINDOWS windows a side of WINDOW_PAIRS pairs), and prints the
# median of (traced - direct) / 2 per pair over its pairs of windows. gmemhook is paired on
# cuMemAlloc_v2+cuMemFree_v2 (the simulated device's direct aliases), heaptrack on malloc+free
# (glibc's __libc_malloc/__libc_free); an empty preload paired as gmemhook is the control (~0).
# REPS processes a mode, interleaved; the table gives the medians of the processes' figures (and
# of their windows' quartiles). BASE_HOOK is paired as gmemhook in processes of its own, next to
# this build's in the same rounds. PAIRED_ONLY=1 prints only this table.
# Usage: [REPS=N] [PAIRS=N] [BASE_HOOK=LIB] [WINDOWS=N] [WINDOW_PAIRS=N] [PAIRED_ONLY=1]
#        bench/run_hook_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH="$BUILD/bin/hook_bench"
HOOK="$BUILD/lib/libgmemhook.so"
FAKE="$BUILD/lib/fakecuda"
FAKE_NVML="$BUILD/lib/fakenvml"
PAIRS=${PAIRS:-200000}
SHORT=$((PAIRS / 10))
OUT=$(mktemp -d)
TIMES=$(mktemp)
STATES=$(mktemp)
trap 'rm -rf "$OUT" "$TIMES" "$STATES"' EXIT
HEAPTRACK=$(command -v heaptrack || true)

# An empty list (a mode not run) gives an empty median, not a failed pipeline under set -e.
median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# CPU seconds (user + system, children included) of: env... command; and the in-process wall
# ns and loop-thread CPU ns per pair hook_bench printed, as "cpu wall thread".
run() {
  local w
  w=$(cd "$OUT" && /usr/bin/time -o "$TIMES" -f '%U %S' env "$@" 2>/dev/null | grep ns_per_pair |
      awk '{ print $6, $9 }')
  rm -rf "${OUT:?}"/*
  echo "$(awk '{ print $1 + $2 }' "$TIMES") $w"
}

hooked=(LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$HOOK" GMEMHOOK_OUT="$OUT/run" GMEMHOOK_QUIET=1)
declare -A cmd=(
  [plain]="LD_LIBRARY_PATH=$FAKE $BENCH"
  [hooked]="${hooked[*]} GMEMHOOK_NVML=0 $BENCH"
  [nvml]="${hooked[*]} LD_LIBRARY_PATH=$FAKE:$FAKE_NVML $BENCH"
  [mplain]="$BENCH"
  [heaptrack]="$HEAPTRACK -o $OUT/ht $BENCH"
)
modes=(plain hooked nvml mplain)
[ -z "$HEAPTRACK" ] || modes+=(heaptrack)
if [ -n "${BASE_HOOK:-}" ]; then
  cmd[base]="LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$BASE_HOOK GMEMHOOK_OUT=$OUT/run GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0 $BENCH"
  modes+=(base)
fi
baseline=""

# The paired table (see the top): the medians over REPS processes a mode of what each process
# measured inside itself; thread CPU time, the wall clock's figure after the slash.
paired_table() {
  local windows=${WINDOWS:-40} wpairs=${WINDOW_PAIRS:-2000} empty="$BUILD/lib/libgmemhook_empty_preload.so"
  declare -A pcmd=(
    [gmemhook]="${hooked[*]} GMEMHOOK_NVML=0 $BENCH"
    [empty]="LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$empty $BENCH"
    [heaptrack]="LD_LIBRARY_PATH=$FAKE $HEAPTRACK -o $OUT/ht $BENCH"
  )
  local pmodes=(gmemhook empty)
  [ -z "$HEAPTRACK" ] || pmodes+=(heaptrack)
  if [ -n "${BASE_HOOK:-}" ]; then
    pcmd[base]="LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$BASE_HOOK GMEMHOOK_OUT=$OUT/run GMEMHOOK_QUIET=1 GMEMHOOK_NVML=0 $BENCH"
    pmodes+=(base)
  fi
  echo "paired in one process: ns added per event, thread CPU / wall clock; q1..q3 of the windows" \
    "(hook_bench paired, $windows windows a side of $wpairs pairs, medians of ${REPS:-5} processes a mode)"
  printf "%-5s %17s %13s %17s %13s %6s %14s  %s\n" depth "gmemhook ns/ev" "q1..q3" \
    "heaptrack ns/ev" "q1..q3" ratio "empty preload" "${BASE_HOOK:+base ns/ev (q1..q3)}"
  local d mode kind line
  for d in 8 32 64; do
    declare -A fig=()
    for _ in $(seq "${REPS:-5}"); do
      for mode in "${pmodes[@]}"; do
        kind=paired
        [ "$mode" = heaptrack ] && kind=paired-malloc
        # shellcheck disable=SC2086  # the command lines above are words on purpose
        line=$(cd "$OUT" && env ${pcmd[$mode]} "$d" "$wpairs" "$kind" "$windows" 2>/dev/null |
               grep " paired ") || { echo "run_hook_bench: $mode paired $d failed" >&2; return 1; }
        rm -rf "${OUT:?}"/*
        # "cpu q1 q3 wall" of this process, one figure per list.
        read -r c q1 q3 w <<<"$(awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
          print v["cpu_added_ns_per_event"], v["cpu_q1"], v["cpu_q3"], v["wall_added_ns_per_event"] }' <<<"$line")"
        fig[$mode.cpu]+="$c " fig[$mode.q1]+="$q1 " fig[$mode.q3]+="$q3 " fig[$mode.wall]+="$w "
        # For the table by the processes' own speed below (bench/process_states.py).
        awk -v d="$d" -v m="$mode" '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
          print d, m, "added", v["cpu_added_ns_per_event"], "direct_pair", v["direct_cpu_ns_per_pair"],
            "traced_pair", v["traced_cpu_ns_per_pair"] }' <<<"$line" >>"$STATES"
      done
    done
    local m=()
    for mode in gmemhook heaptrack empty base; do
      m+=("$(median <<<"${fig[$mode.cpu]:-}")" "$(median <<<"${fig[$mode.q1]:-}")"
          "$(median <<<"${fig[$mode.q3]:-}")" "$(median <<<"${fig[$mode.wall]:-}")")
    done
    awk -v d="$d" -v m="$(IFS=,; echo "${m[*]}")" 'BEGIN { split(m, v, ",")
      # v: gmemhook 1-4, heaptrack 5-8, empty 9-12, base 13-16 (cpu q1 q3 wall); "" when not run
      fmt = "%.1f / %.1f"
      g = sprintf(fmt, v[1], v[4]); gq = sprintf("%.1f..%.1f", v[2], v[3])
      h = v[5] == "" ? "-" : sprintf(fmt, v[5], v[8]); hq = v[5] == "" ? "-" : sprintf("%.1f..%.1f", v[6], v[7])
      r = v[5] == "" || v[5] == 0 ? "-" : sprintf("%.2f", v[1] / v[5])
      e = sprintf(fmt, v[9], v[12])
      b = v[13] == "" ? "" : sprintf("%.1f (%.1f..%.1f)", v[13], v[14], v[15])
      printf "%-5d %17s %13s %17s %13s %6s %14s  %s\n", d, g, gq, h, hq, r, e, b }'
    unset fig
  done
  echo "(ratio = gmemhook / heaptrack by thread CPU; each figure is a difference inside one process," \
    "so a process's speed scales it but cannot add to it; the processes compared are separate)"
  # A process runs fast or ~1.4x slower for its whole life on the GPU machine's host, the
  # recorded and the direct call alike: the same figures with the processes sorted by their own
  # direct call's speed, so that each state's ratio compares processes that ran alike.
  if [ -n "$HEAPTRACK" ] && command -v python3 >/dev/null; then
    for d in 8 32 64; do
      echo "by the processes' own speed, depth $d:"
      grep "^$d " "$STATES" | python3 "$(dirname "$0")/process_states.py" - heaptrack | grep -v '^empty'
    done
  fi
}
if [ -n "${PAIRED_ONLY:-}" ]; then
  paired_table
  exit 0
fi

printf "%-5s %13s %13s %7s %15s %15s %10s %10s %10s %7s\n" depth "gmemhook ns/ev" "heaptrack ns/ev" \
  ratio "gmemhook cpu/ev" "heaptrack cpu/ev" "NVML cost" "gmh thr/ev" "ht thr/ev" ratio
for d in 8 32 64; do
  declare -A marginal=() wall=() thread=()
  for _ in $(seq "${REPS:-5}"); do
    for mode in "${modes[@]}"; do
      kind=sync
      [[ $mode == mplain || $mode == heaptrack ]] && kind=malloc
      # shellcheck disable=SC2086  # the command lines above are words on purpose
      long=$(run ${cmd[$mode]} "$d" "$PAIRS" "$kind")
      # shellcheck disable=SC2086
      short=$(run ${cmd[$mode]} "$d" "$SHORT" "$kind")
      read -r lcpu lwall lthread <<<"$long"
      # CPU ns per pair at the margin: the long run's extra pairs (each run adds a tenth as warm-up).
      marginal[$mode]+="$(awk -v l="$lcpu" -v s="${short%% *}" -v n="$(( (PAIRS - SHORT) * 11 / 10 ))" \
        'BEGIN { printf "%.1f", (l - s) * 1e9 / n }') "
      wall[$mode]+="$lwall "
      thread[$mode]+="$lthread "
    done
  done
  p=$(median <<<"${marginal[plain]}") h=$(median <<<"${marginal[hooked]}")
  n=$(median <<<"${marginal[nvml]}") mp=$(median <<<"${marginal[mplain]}")
  ht=$(median <<<"${marginal[heaptrack]:-}")
  pw=$(median <<<"${wall[plain]}") hw=$(median <<<"${wall[hooked]}") nw=$(median <<<"${wall[nvml]}")
  mw=$(median <<<"${wall[mplain]}") htw=$(median <<<"${wall[heaptrack]:-}")
  pt=$(median <<<"${thread[plain]}") ht_=$(median <<<"${thread[hooked]}")
  mt=$(median <<<"${thread[mplain]}") htt=$(median <<<"${thread[heaptrack]:-}")
  awk -v d="$d" -v p="$p" -v h="$h" -v mp="$mp" -v ht="$ht" -v pw="$pw" -v hw="$hw" -v nw="$nw" \
      -v mw="$mw" -v htw="$htw" -v pt="$pt" -v gt="$ht_" -v mt="$mt" -v htt="$htt" 'BEGIN{
    gw = (hw - pw) / 2
    hwall = htw == "" ? "-" : sprintf("%.1f", (htw - mw) / 2)
    ratio = htw == "" ? "-" : sprintf("%.2f", gw / ((htw - mw) / 2))
    hcpu = ht == "" ? "-" : sprintf("%.1f", (ht - mp) / 2)
    gthr = (gt - pt) / 2
    hthr = htt == "" ? "-" : sprintf("%.1f", (htt - mt) / 2)
    tratio = htt == "" ? "-" : sprintf("%.2f", gthr / ((htt - mt) / 2))
    printf "%-5d %13.1f %13s %7s %15.1f %15s %+9.1f%% %10.1f %10s %7s\n", d, gw, hwall, ratio,
           (h - p) / 2, hcpu, (nw / hw - 1) * 100, gthr, hthr, tratio }'
  if [ -n "${BASE_HOOK:-}" ]; then
    baseline+=$(awk -v d="$d" -v pt="$pt" -v bt="$(median <<<"${thread[base]}")" -v gt="$ht_" \
      -v mt="$mt" -v htt="$htt" 'BEGIN{
      b = (bt - pt) / 2; g = (gt - pt) / 2
      r = htt == "" ? "-" : sprintf("%.2f", b / ((htt - mt) / 2))
      printf "%-5d base %.1f ns/ev (ratio %s), this build %.1f ns/ev\n", d, b, r, g }')$'\n'
  fi
  unset marginal wall thread
done
[ -z "$baseline" ] || printf "CPU time of the loop's thread, BASE_HOOK=%s next to this build:\n%s" \
  "$BASE_HOOK" "$baseline"
echo "(ns added per event: by the loop's own clock (ratio = gmemhook / heaptrack), and in CPU time of" \
  "all processes at the margin (heaptrack_interpret's share included; 10 ms resolution), and in" \
  "CPU time of the loop's thread (thr/ev, ratio = gmemhook / heaptrack);" \
  "medians of ${REPS:-5} interleaved rounds of $PAIRS and $SHORT pairs)"
paired_table
# Graph launches: each one is recorded with its stack and the graph pool's figures
# (two cuDeviceGetGraphMemAttribute calls). One event per launch; the loop's own clock, median.
lp="" lh=""
for _ in $(seq "${REPS:-5}"); do
  read -r _ w _ <<<"$(run LD_LIBRARY_PATH="$FAKE" "$BENCH" 32 50000 launch)"; lp+="$w "
  read -r _ w _ <<<"$(run "${hooked[@]}" GMEMHOOK_NVML=0 "$BENCH" 32 50000 launch)"; lh+="$w "
done
awk -v p="$(median <<<"$lp")" -v h="$(median <<<"$lh")" 'BEGIN{
  printf "graph launch, depth 32: plain %.1f ns, hooked %.1f ns, added %.1f ns per launch\n", p, h, h-p }'
