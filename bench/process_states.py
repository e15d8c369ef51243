#!/usr/bin/env python3
"""Sorts hook_bench paired processes by their own speed, so that like is compared with like.

On the GPU machine's host a process runs fast or ~1.4x slower for its whole life (its
vCPU's placement, we think; pinning and ASLR off do not change it): the direct call's time
(hook_bench's direct_cpu_ns_per_pair, the same code with or without a recorder) falls into two
clusters, and so does what the recorder adds. A median over processes then depends on how many
landed in each. This splits each mode's processes at the widest gap between their direct
times (when that gap is over 10 %: otherwise they ran alike, and no state is named) and gives each
state's median; a state's ratio is printed only where both modes show both states.

Input (stdin or a file): lines "ROUND MODE added A direct_pair D traced_pair T", as
scripts/hook-probe.sh writes them (RAW=). Usage: bench/process_states.py [RAW] [PEER]
PEER (default heaptrack) is the mode every other mode's figures are divided by, state by state.
"""
import statistics
import sys
from collections import defaultdict


def split_states(procs):
    """procs: [(direct, added)] -> (fast, slow); slow is empty when no gap is wide enough."""
    procs = sorted(procs)
    best, at = 0.10, None
    for i in range(1, len(procs)):
        gap = (procs[i][0] - procs[i - 1][0]) / procs[i - 1][0]
        if gap > best:
            best, at = gap, i
    return (procs, []) if at is None else (procs[:at], procs[at:])


def median_added(procs):
    return statistics.median(a for _, a in procs) if procs else None


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin
    peer = sys.argv[2] if len(sys.argv) > 2 else "heaptrack"
    by_mode = defaultdict(list)
    for line in src:
        f = line.split()
        if len(f) >= 8 and f[2] == "added":
            by_mode[f[1]].append((float(f[5]), float(f[3])))
    states = {m: split_states(p) for m, p in by_mode.items()}
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    print(f"{'mode':<20} {'all':>7} | {'fast: n':>7} {'added':>7} {'direct':>7} | "
          f"{'slow: n':>7} {'added':>7} {'direct':>7} | ratio to {peer} fast / slow / all")
    peer_fast, peer_slow = states.get(peer, ([], []))
    peer_all = by_mode.get(peer, [])
    for m, (fast, slow) in states.items():
        ratios = []
        # A mode whose processes all ran alike cannot say which state that was: no state ratio.
        both = bool(slow) and bool(peer_slow)
        for mine, theirs in ((fast, peer_fast), (slow, peer_slow), (by_mode[m], peer_all)):
            a, b = median_added(mine), median_added(theirs)
            if mine is not by_mode[m] and not both:
                a = None
            ratios.append("-" if a is None or not b else f"{a / b:.3f}")
        direct = lambda p: statistics.median(d for d, _ in p) if p else None
        print(f"{m:<20} {fmt(median_added(by_mode[m])):>7} | {len(fast):>7} {fmt(median_added(fast)):>7} "
              f"{fmt(direct(fast)):>7} | {len(slow):>7} {fmt(median_added(slow)):>7} {fmt(direct(slow)):>7} | "
              + " / ".join(ratios))
    print("(ns added an event, thread CPU, medians of each state's processes; direct = the process's own "
          "direct call, ns a pair; a state's ratio compares processes that ran at the same speed)")


if __name__ == "__main__":
    main()
