#!/usr/bin/env python3
"""What recording every PyTorch block costs, on the CPU-bound loop where a
recorder's overhead shows: 8 x (Linear(256) + LayerNorm + GELU), batch 32, AdamW, default
caching allocator (~2.7 ms/step and ~134 tensor allocations per step on an H200).

Modes, each a fresh process:
  plain           no recorder
  gmemhook        LD_PRELOAD=libgmemhook.so: segments and every block (tensor) event, native and
                  Python stacks, NVML samples (the defaults)
  gmemhook-no-nvml  the same with GMEMHOOK_NVML=0: what sampling nvidia-smi's figures costs
                  is the difference between the two
  history-python  torch.cuda.memory._record_memory_history(stacks="python")
  history-all     torch.cuda.memory._record_memory_history(stacks="all")
Where gmemhook's cost goes (the per-event probe explains only a third of it), each
with NVML sampling off so that only the named part changes:
  gmemhook-native     native stacks only (GMEMHOOK_PYTHON=0)
  gmemhook-python     Python stacks only (GMEMHOOK_DEPTH=0)
  gmemhook-no-stacks  events without any stack (GMEMHOOK_DEPTH=0 GMEMHOOK_PYTHON=0)
  gmemhook-disabled   the library loaded but recording nothing (GMEMHOOK_DISABLE=1)
  gmemhook-stats      gmemhook-no-nvml timing its own stack captures (GMEMHOOK_STACK_STATS=1):
                      the table quotes the line it prints at exit (ns per capture, native and
                      Python frames, how many captures took over 10 us)
  gmemhook-event-stats  gmemhook-no-nvml timing only each event in its recorder
                      (GMEMHOOK_STACK_STATS=events): the recorder's share of a step, measured
                      inside the process (recording_share)
  gmemhook-full-native  native walks past the Python interpreter loop, as before it ended
                      there (GMEMHOOK_FULL_NATIVE_STACKS=1); -stats: timing its captures too
  gmemhook-no-recent-stats  gmemhook-stats without the recent walks (GMEMHOOK_RECENT_WALKS=0)
The same cost measured inside one process, where the machine's process-to-process noise cancels
(a process on the H200 runs fast or ~1.4x slower for its whole life):
  gmemhook-ab         gmemhook-no-nvml, recording on and paused (gmemhook_pause_events,
                      include/gmemhook/control.h) in turns of --ab-window steps; each on window
                      over its paused neighbour. Paused, the hook is loaded but idle: what that
                      costs (the wrappers' pass-through) is not in the figure.
  gmemhook-aa         the same turns and calls, never paused: the control (reads ~0)
And the controls, which say how much of a difference is the machine's noise:
  preload-empty       LD_PRELOAD of a library that defines nothing (libgmemhook_empty_preload.so
                      beside libgmemhook.so): what any preload costs
  plain-again         plain once more, in its own place in the interleaving: the spread between
                      the two plain medians is the noise floor of the table

Every child is pinned to one CPU (--cpu, default the last one this process may use): the loop is
CPU-bound and a process moved between cores or sharing one with another job is slower by more
than the few per cent being measured.

--compare runs every mode (or those of --modes) REPS times, interleaved (plain, gmemhook, history-python, history-all,
plain, ...) so that a noisy machine slows all modes alike, and prints a markdown table of the
median ms/step of each mode and its overhead over plain, then the same by the CPU time of all the
process's threads per step, which time the pinned CPU gave another tenant does not inflate (one
run's two plain wall-time medians were 15 % apart), then by each run's fastest window of
--window steps (a whole run's time moved ±20 % between processes on the H200, CPU time with it:
what another tenant of the host takes from a vCPU counts as this process's CPU time).
--mode runs one measurement and prints one JSON line (what --compare runs in each child).

  python3 bench/torch_loop_bench.py --compare --hook build/lib/libgmemhook.so [--reps 7]
  (bench/run_torch_loop_bench.sh does this from a build directory.)

--together CPUS runs a round's modes at the same time instead, each pinned to its own CPU of
CPUS (one per mode, turned by one each round), timing from the moment all are warm: a slow spell
of the machine then falls on every mode of the round alike. It adds a table comparing each run's
50-step windows with plain's windows of the same round (the k-th window against the k-th):
the estimator with the least noise, as the plain-again control in it shows. The modes share the
GPU; the loop is CPU-bound (its kernels keep the GPU busy a fraction of a step), so keep to three
or four modes.

A before/after of a change in the same rounds: --base-hook OTHER/libgmemhook.so, and a mode
named base:MODE runs gmemhook MODE under that library, e.g.
  --modes plain,gmemhook-no-nvml,base:gmemhook-no-nvml,gmemhook-stats,base:gmemhook-stats
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ["plain", "gmemhook", "gmemhook-no-nvml", "history-python", "history-all"]
# The parts of gmemhook's cost: settings on top of gmemhook-no-nvml's.
PARTS = {
    "gmemhook-native": {"GMEMHOOK_PYTHON": "0"},
    "gmemhook-python": {"GMEMHOOK_DEPTH": "0"},
    "gmemhook-no-stacks": {"GMEMHOOK_DEPTH": "0", "GMEMHOOK_PYTHON": "0"},
    "gmemhook-disabled": {"GMEMHOOK_DISABLE": "1"},
    "gmemhook-stats": {"GMEMHOOK_STACK_STATS": "1"},
    "gmemhook-event-stats": {"GMEMHOOK_STACK_STATS": "events"},
    "gmemhook-full-native": {"GMEMHOOK_FULL_NATIVE_STACKS": "1"},
    "gmemhook-full-native-stats": {"GMEMHOOK_FULL_NATIVE_STACKS": "1", "GMEMHOOK_STACK_STATS": "1"},
    "gmemhook-no-recent-stats": {"GMEMHOOK_RECENT_WALKS": "0", "GMEMHOOK_STACK_STATS": "1"},
    "gmemhook-ab": {},
    "gmemhook-aa": {},
}
# In-process modes (see measure()): recording on and paused in turns, and the same turns never
# paused, the control that says how much two neighbouring windows differ by themselves.
AB_MODES = ("gmemhook-ab", "gmemhook-aa")
CONTROLS = ["preload-empty", "plain-again"]
ALL_MODES = MODES + list(PARTS) + CONTROLS


def measure(mode, warmup, steps, batch, window, calib, wait_go=False):
    """ms per training step in this process, after `warmup` steps (all of them, and the fastest
    window of `window` steps); block allocations per step. With `wait_go` (--together), the
    process says "ready" on stdout after the warm-up and starts timing when a line arrives on
    stdin, so that the modes of a round time the same seconds of the machine."""
    import torch

    pause = None
    if mode in AB_MODES:
        import ctypes

        try:
            pause = ctypes.CDLL(None).gmemhook_pause_events
        except AttributeError:
            sys.exit("torch_loop_bench: %s needs a hook with gmemhook_pause_events" % mode)
        pause.argtypes = [ctypes.c_int]
    if mode == "preload-empty" and not any("empty_preload" in l for l in open("/proc/self/maps")):
        sys.exit("torch_loop_bench: preload-empty without its library loaded")
    if mode == "history-python":
        torch.cuda.memory._record_memory_history(stacks="python")
    elif mode == "history-all":
        torch.cuda.memory._record_memory_history(stacks="all")
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        x = torch.randn(batch, 256, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    if wait_go:
        print("ready", flush=True)
        sys.stdin.readline()
    before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    # CPU time of every thread of the process (the autograd engine's and the NVML sampler's
    # count, as they should) as well as wall time: time the pinned CPU spent on another tenant
    # inflates the wall time only (one H200 run had its two plain medians 15 % apart).
    # The steps also run as windows of `window` steps, each timed on its own (a synchronize at
    # its end, the same in every mode): on the H200 a whole run's time moved ±20 % from one
    # process to the next, far more than the few per cent measured, while the fastest window of
    # a run — the stretch the CPU was not given to anyone else — moved much less.
    # After each window, a fixed piece of work the recorder never sees (calibrate(): no GPU
    # call, no allocation), timed too: whatever makes this process fast or slow for its whole
    # life slows both alike, so a window's ms/step over the calibration's ms cancels it.
    # Outside the timed steps (ms_per_step and the windows leave it out).
    calibration = []
    calib_cpu = 0.0
    # gmemhook-ab: windows in the order on, paused, paused, on, on, paused, ... so that each pair
    # of neighbours (0-1, 2-3, ...) holds one of each, the on window first and last in turn;
    # gmemhook-aa makes the same calls but never pauses. "on" names the windows at the places ab
    # records in.
    on_window = []
    windows = []
    cpu_start = time.process_time()
    start = time.perf_counter()
    done = 0
    while done < steps:
        n = min(window, steps - done)
        on_window.append(len(windows) % 4 in (0, 3))
        if pause:
            pause(0 if on_window[-1] or mode == "gmemhook-aa" else 1)
        window_start = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        windows.append((time.perf_counter() - window_start) * 1e3 / n)
        done += n
        if calib:
            calib_start, calib_cpu_start = time.perf_counter(), time.process_time()
            calibration.append(calibrate(calib) * 1e3)
            calib_cpu += time.process_time() - calib_cpu_start
            start += time.perf_counter() - calib_start
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start - calib_cpu
    if pause:
        pause(0)
    after = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    result = {"mode": mode, "ms_per_step": elapsed * 1e3 / steps, "steps": steps,
              "cpu_ms_per_step": cpu * 1e3 / steps,
              "best_window_ms_per_step": min(windows), "windows": windows,
              "blocks_per_step": (after - before) / steps, "torch": torch.__version__}
    if pause:
        # Each pair of neighbouring windows: the on window's ms/step over the other's.
        result["ab_ratios"] = [
            (windows[k] / windows[k + 1]) if on_window[k] else (windows[k + 1] / windows[k])
            for k in range(0, len(windows) - 1, 2)]
    if calibration:
        normalized = [w / c for w, c in zip(windows, calibration)]
        result.update(calibration_ms=calibration, normalized_windows=normalized,
                      normalized_step=statistics.median(normalized))
    return result


def calibrate(rounds):
    """Seconds taken by `rounds` rounds of the kind of work a training step's CPU side does,
    the interpreter and PyTorch's dispatcher, on a CPU tensor changed in place: no allocation
    and no CUDA call, so no recorder is ever called."""
    import torch

    t = torch.ones(16)
    begin = time.perf_counter()
    for i in range(rounds):
        t.add_(1.0).mul_(0.5)
        sum(range(i & 63))
    return time.perf_counter() - begin


BASE = "base:"  # a mode run under --base-hook instead of --hook


def start_child(name, args, log_root, cpu):
    """Starts one measurement of `name` pinned to `cpu`; finish_child() collects it."""
    env = dict(os.environ)
    log_dir = None
    hook, mode = (args.base_hook, name[len(BASE):]) if name.startswith(BASE) else (args.hook, name)
    if mode.startswith("gmemhook"):
        log_dir = tempfile.mkdtemp(dir=log_root)
        env.update(LD_PRELOAD=hook, GMEMHOOK_OUT=log_dir, GMEMHOOK_QUIET="1")
        env["GMEMHOOK_NVML"] = "1" if mode == "gmemhook" else "0"
        env.update(PARTS.get(mode, {}))
    elif mode == "preload-empty":
        env["LD_PRELOAD"] = os.path.join(os.path.dirname(args.hook), "libgmemhook_empty_preload.so")
    cmd = ([sys.executable, os.path.abspath(__file__), "--mode", mode, "--warmup",
            str(args.warmup), "--steps", str(args.steps), "--batch", str(args.batch),
            "--window", str(args.ab_window if mode in AB_MODES else args.window),
            "--calibrate", "0" if mode in AB_MODES else str(args.calibrate)]
           + (["--wait-go"] if args.together else []))
    # stderr to a file: a child's stack-stats line must not fill a pipe nobody reads yet.
    err = tempfile.TemporaryFile(mode="w+", dir=log_root)
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=err, text=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    return {"name": name, "proc": p, "err": err, "log_dir": log_dir}


def wait_ready(child):
    """Reads the child's "ready" (--together); exits when the child failed before it."""
    line = child["proc"].stdout.readline()
    if line.strip() != "ready":
        finish_child(child)  # reports the failure
        sys.exit("torch_loop_bench: %s did not get ready: %r" % (child["name"], line))


def finish_child(child):
    p, name, log_dir = child["proc"], child["name"], child["log_dir"]
    out, _ = p.communicate(timeout=600)
    child["err"].seek(0)
    stderr = child["err"].read()
    child["err"].close()
    if p.returncode != 0:
        sys.exit("torch_loop_bench: %s failed (%d):\n%s" % (name, p.returncode, stderr))
    result = json.loads(out.strip().splitlines()[-1])
    stats = [l for l in stderr.splitlines() if "stack stats:" in l]
    if stats:
        result["stack_stats"] = stats[-1]
    if log_dir:
        # The log's size shows that block events were recorded (a segments-only log is tiny).
        result["log_bytes"] = sum(os.path.getsize(os.path.join(d, f))
                                  for d, _, files in os.walk(log_dir) for f in files)
        shutil.rmtree(log_dir)
    return result


def print_table(modes, runs, key, heading):
    """One markdown table: each mode's median of `key`, every run's value (sorted), and the
    overhead over plain three ways. On the H200 a process is either fast or ~40 % slower for its
    whole life, plain included, and the machine has slow spells that slow every mode of a round,
    so a median of five can land on either side. The sorted runs show which; the machine's noise
    only ever adds time, so the fastest runs are compared too; and each round's run is compared
    with plain's run of the same round (the median of those ratios: a slow spell that covers a
    round cancels out)."""
    plain = [r[key] for r in runs["plain"]]
    print("| mode | %s | every run, sorted | overhead (medians) | overhead (fastest runs) "
          "| overhead (paired rounds) |" % heading)
    print("|---|---|---|---|---|---|")
    for mode in modes:
        ms = sorted(r[key] for r in runs[mode])
        med = statistics.median(ms)
        if mode == "plain":
            by_median = by_fastest = by_round = "—"
        else:
            by_median = "%+.1f %%" % ((med / statistics.median(plain) - 1) * 100)
            by_fastest = "%+.1f %%" % ((ms[0] / min(plain) - 1) * 100)
            ratios = [r[key] / p for r, p in zip(runs[mode], plain)]
            by_round = "%+.1f %%" % ((statistics.median(ratios) - 1) * 100)
        print("| %s | %.3f | %s | %s | %s | %s |"
              % (mode, med, " ".join("%.3f" % m for m in ms), by_median, by_fastest, by_round))


def recording_share(r):
    """What recording cost one gmemhook-stats or gmemhook-event-stats process, measured inside
    it, where the machine's process-to-process noise (a whole process ±20 %) cancels: the
    recorder's time per event (the stats line's "ns each in the recorder", its stack capture
    included, less the one clock read its timing adds; not the exported wrapper around it, ~50
    instructions a call; with gmemhook-stats also the capture's own timing, three clock reads
    and its counters) times the events of a step (each block is allocated and freed: 2 per
    block), over the step's time less that. None without the figures."""
    line = r.get("stack_stats", "")
    m = re.search(r"events recorded \d+, (\d+) ns each", line)
    if not m:
        return None
    read = re.search(r"an event clock read (\d+) ns", line)
    per_event = int(m.group(1)) - (int(read.group(1)) if read else 0)
    per_step_ms = per_event * 2 * r["blocks_per_step"] / 1e6
    # The events over 100 us (logs opened, chunks mapped: once a file or a chunk) as if all of
    # them fell in the timed steps: an upper bound.
    slow = re.search(r"and (\d+) more over \d+ us \((\d+) us", line)
    slow_ms = int(slow.group(2)) / 1e3 / r["steps"] if slow and r.get("steps") else 0
    share = per_step_ms / (r["ms_per_step"] - per_step_ms) * 100
    bound = (per_step_ms + slow_ms) / (r["ms_per_step"] - per_step_ms - slow_ms) * 100
    return share, bound


def print_paired_windows(modes, runs, window, key="windows", what=""):
    """--together only: each window of a run against the same window of plain's run of the same
    round, which ran at the same time on another CPU (the k-th window of both started within a
    few windows' drift of each other): the median of those ratios over every window of every
    round, and of the rounds' medians. `key` picks the windows' ms/step or their ratio to the
    calibration that followed each ("normalized_windows")."""
    print("| mode | windows compared | overhead (median of paired %d-step windows%s) "
          "| overhead (median of the rounds' medians) |" % (window, what))
    print("|---|---|---|---|")
    for mode in modes:
        if mode == "plain":
            continue
        every, per_round = [], []
        for r, p in zip(runs[mode], runs["plain"]):
            ratios = [a / b for a, b in zip(r[key], p[key])]
            every += ratios
            per_round.append(statistics.median(ratios))
        print("| %s | %d | %+.1f %% | %+.1f %% |"
              % (mode, len(every), (statistics.median(every) - 1) * 100,
                 (statistics.median(per_round) - 1) * 100))


def compare(args):
    if not args.hook or not os.path.exists(args.hook):
        sys.exit("torch_loop_bench: --hook must name libgmemhook.so")
    if args.cpu is None:
        args.cpu = max(os.sched_getaffinity(0))
    modes = args.modes.split(",") if args.modes else MODES
    based = [BASE + m for m in ALL_MODES if m.startswith("gmemhook")] if args.base_hook else []
    unknown = [m for m in modes if m not in ALL_MODES + based]
    if unknown or "plain" not in modes:
        sys.exit("torch_loop_bench: --modes must include plain and name only %s"
                 % (ALL_MODES + based))
    if args.base_hook and not os.path.exists(args.base_hook):
        sys.exit("torch_loop_bench: no --base-hook %s" % args.base_hook)
    cpus = [int(c) for c in args.together.split(",")] if args.together else []
    if args.together and len(cpus) < len(modes):
        sys.exit("torch_loop_bench: --together needs a CPU for each of the %d modes" % len(modes))
    runs = {m: [] for m in modes}
    log_root = tempfile.mkdtemp(prefix="torch-loop-bench-")

    def show(rep, r):
        print("rep %d %-15s %.3f ms/step, %.3f CPU ms/step, fastest window %.3f%s"
              % (rep + 1, r["mode_name"], r["ms_per_step"], r["cpu_ms_per_step"],
                 r["best_window_ms_per_step"], " (CPU %d)" % r["cpu"] if cpus else ""),
              file=sys.stderr, flush=True)

    try:
        for rep in range(args.reps):
            if not cpus:
                for mode in modes:
                    r = finish_child(start_child(mode, args, log_root, args.cpu))
                    r.update(mode_name=mode, cpu=args.cpu)
                    runs[mode].append(r)
                    show(rep, r)
                continue
            # Every mode at once, each on its own CPU, the CPUs turned by one each round so that
            # a slower core is every mode's in turn; timing starts when all are warm.
            children = [(mode, cpus[(i + rep) % len(cpus)]) for i, mode in enumerate(modes)]
            started = [start_child(mode, args, log_root, cpu) for mode, cpu in children]
            for child in started:
                wait_ready(child)
            for child in started:
                child["proc"].stdin.write("go\n")
                child["proc"].stdin.flush()
            for (mode, cpu), child in zip(children, started):
                r = finish_child(child)
                r.update(mode_name=mode, cpu=cpu)
                runs[mode].append(r)
                show(rep, r)
    finally:
        shutil.rmtree(log_root, ignore_errors=True)
    first = runs["plain"][0]
    how = ("the modes of a round run at the same time on CPUs %s (turned each round)" % args.together
           if cpus else "each pinned to CPU %d" % args.cpu)
    print("torch %s, %d steps after %d warm-up, batch %d, ~%.0f block allocations per step, "
          "median of %d interleaved runs, %s\n"
          % (first["torch"], args.steps, args.warmup, args.batch, first["blocks_per_step"],
             args.reps, how))
    # The in-process modes have windows of their own size, half of them paused: they are left
    # out of the tables comparing processes, and summed up apart below.
    between = [m for m in modes if m not in AB_MODES]
    print_table(between, runs, "ms_per_step", "ms/step (median)")
    # The same runs by CPU time of the whole process (see measure()).
    print()
    print_table(between, runs, "cpu_ms_per_step", "CPU ms/step, all threads (median)")
    # And by each run's fastest window of --window steps (see measure()).
    print()
    print_table(between, runs, "best_window_ms_per_step",
                "ms/step, fastest %d-step window of a run (median)" % args.window)
    if cpus:
        print()
        print_paired_windows(between, runs, args.window)
    if args.calibrate:
        # Each window's ms/step over the ms of the calibration that ran right after it in the
        # same process: the process's own speed divided out (see measure()).
        print("\nBy each window's ms/step over the calibration's ms that followed it (%d rounds "
              "of in-place CPU tensor work; the recorder is never called in it):\n" % args.calibrate)
        print_table(between, runs, "normalized_step",
                    "window ms/step / calibration ms, a run's median")
        print("\ncalibration ms, each run's median (the process's own speed): %s"
              % "; ".join("%s %s" % (m, " ".join("%.2f" % statistics.median(r["calibration_ms"])
                                                 for r in runs[m])) for m in between))
        if cpus:
            print()
            print_paired_windows(between, runs, args.window, "normalized_windows",
                                 ", each over its calibration")
    if "gmemhook" in runs and "gmemhook-no-nvml" in runs:
        on = statistics.median(r["ms_per_step"] for r in runs["gmemhook"])
        off = statistics.median(r["ms_per_step"] for r in runs["gmemhook-no-nvml"])
        print("\nNVML sampling (gmemhook vs gmemhook-no-nvml): %+.1f %% (target: at most +1 %%)"
              % ((on / off - 1) * 100))
    for stats in ("gmemhook-stats", "gmemhook-event-stats", "gmemhook-full-native-stats",
                  "gmemhook-no-recent-stats"):
        for mode in (stats, BASE + stats):
            for r in runs.get(mode, []):
                print("\n%s (%.3f ms/step): %s"
                      % (mode, r["ms_per_step"], r.get("stack_stats", "-")))
            in_process = [x for x in (recording_share(r) for r in runs.get(mode, [])) if x]
            if in_process:
                shares, bounds = [x[0] for x in in_process], [x[1] for x in in_process]
                print("\n%s, measured inside each process: the recorder took %s %% of a step "
                      "(median %+.1f %%; with its events over 100 us as if all fell in the timed "
                      "steps, median %+.1f %%)"
                      % (mode, " ".join("%+.1f" % x for x in shares), statistics.median(shares),
                         statistics.median(bounds)))
    for mode in AB_MODES:
        if runs.get(mode):
            per_run = [statistics.median(r["ab_ratios"]) for r in runs[mode]]
            pooled = [x for r in runs[mode] for x in r["ab_ratios"]]
            print("\n%s, inside each process (%s, %d-step windows in turns): median of each "
                  "run's on/paused pairs %s %%; median of the runs' %+.1f %%, of all %d pairs "
                  "%+.1f %%"
                  % (mode, "recording on and paused" if mode == "gmemhook-ab"
                     else "the same turns, never paused", args.ab_window,
                     " ".join("%+.1f" % ((x - 1) * 100) for x in per_run),
                     (statistics.median(per_run) - 1) * 100, len(pooled),
                     (statistics.median(pooled) - 1) * 100))
    for mode in modes:
        if mode.split(BASE)[-1].startswith("gmemhook") and not mode.endswith("gmemhook-disabled"):
            logs = [r["log_bytes"] for r in runs[mode]]
            print("\n%s log: %.1f KiB per run (median)" % (mode, statistics.median(logs) / 1024))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", action="store_true", help="run every mode and print the table")
    ap.add_argument("--mode", choices=ALL_MODES, help="one measurement in this process")
    ap.add_argument("--modes", help="comma-separated modes for --compare (default: %s)"
                    % ",".join(MODES))
    ap.add_argument("--hook", help="libgmemhook.so (for --compare)")
    ap.add_argument("--base-hook", help="another libgmemhook.so, for the base:MODE modes")
    ap.add_argument("--reps", type=int, default=7, help="runs per mode (>= 5)")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--window", type=int, default=50,
                    help="steps per separately timed window (the third table: each run's fastest)")
    ap.add_argument("--ab-window", type=int, default=10,
                    help="steps per window of the in-process modes %s" % ", ".join(AB_MODES))
    ap.add_argument("--calibrate", type=int, default=5000, metavar="ROUNDS",
                    help="rounds of the calibration work after each window (0: none); the "
                         "tables by ms/step over the calibration's ms need it")
    ap.add_argument("--cpu", type=int, help="the CPU every child runs on (default: the last one)")
    ap.add_argument("--together", metavar="CPUS",
                    help="comma-separated CPUs, one per mode: run a round's modes at the same "
                         "time, each pinned to its own CPU, so that what slows the machine for a "
                         "while slows them alike; adds a table of paired windows")
    ap.add_argument("--wait-go", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.compare:
        if args.reps < 5:
            sys.exit("torch_loop_bench: --reps must be at least 5 (medians of noisy runs)")
        compare(args)
    elif args.mode:
        print(json.dumps(measure(args.mode, args.warmup, args.steps, args.batch, args.window,
                                 args.calibrate, args.wait_go)))
    else:
        ap.error("give --compare or --mode")


if __name__ == "__main__":
    main()
