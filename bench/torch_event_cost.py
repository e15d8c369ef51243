#!/usr/bin/env python3
"""Where the hook's cost per PyTorch block event goes: a loop that
only makes and drops one small CUDA tensor (two block events per iteration, no cudaMalloc once the
cache is warm), at a chosen Python call depth, timed plain and under libgmemhook.so with several
GMEMHOOK_DEPTH / GMEMHOOK_PYTHON settings. The training-loop benchmark (torch_loop_bench.py) is
noisy at the +-10 % level; this isolates ns per event, which times events per step gives the cost.

  python3 bench/torch_event_cost.py --hook dist/lib/libgmemhook.so [--iters 200000] [--pydepth 20]

Prints one markdown table: mode, ns per iteration (median of --reps), ns added per event.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODES = {
    "plain": None,
    "hook (defaults: depth 64, python)": {},
    "hook depth 32": {"GMEMHOOK_DEPTH": "32"},
    "hook depth 16": {"GMEMHOOK_DEPTH": "16"},
    "hook depth 0 (python only)": {"GMEMHOOK_DEPTH": "0"},
    "hook no python": {"GMEMHOOK_PYTHON": "0"},
    "hook depth 0, no python": {"GMEMHOOK_DEPTH": "0", "GMEMHOOK_PYTHON": "0"},
}


def child(iters, pydepth):
    import torch

    torch.empty(1024, device="cuda")
    torch.cuda.synchronize()

    def nest(n):
        if n == 0:
            t0 = time.perf_counter_ns()
            for _ in range(iters):
                t = torch.empty(1024, device="cuda")
                del t
            return time.perf_counter_ns() - t0
        return nest(n - 1)

    nest(pydepth)  # warm-up at the same depth
    ns = nest(pydepth)
    print(json.dumps({"ns_per_iter": ns / iters}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook")
    ap.add_argument("--iters", type=int, default=200000)
    ap.add_argument("--pydepth", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(a.iters, a.pydepth)
        return
    hook = os.path.abspath(a.hook)
    results = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(a.reps):
            for mode, extra in MODES.items():
                env = dict(os.environ)
                if extra is not None:
                    env.update(extra)
                    env["LD_PRELOAD"] = hook
                    env["GMEMHOOK_OUT"] = os.path.join(out, "r")
                    env["GMEMHOOK_QUIET"] = "1"
                r = subprocess.run([sys.executable, __file__, "--child", "--iters", str(a.iters),
                                    "--pydepth", str(a.pydepth)], env=env, check=True,
                                   capture_output=True, text=True)
                results[mode].append(json.loads(r.stdout.strip().splitlines()[-1])["ns_per_iter"])
    base = statistics.median(results["plain"])
    print(f"python depth {a.pydepth}, {a.iters} iterations x {a.reps} runs, 2 block events/iteration")
    print("| mode | ns/iteration (median) | ns added per event |")
    print("| --- | ---: | ---: |")
    for mode, v in results.items():
        med = statistics.median(v)
        print(f"| {mode} | {med:.0f} | {(med - base) / 2:.0f} |")


if __name__ == "__main__":
    main()
