"""Cost of Python frames in stacks: cudaMalloc+cudaFree pairs through ctypes on the simulated
device, issued from a Python stack DEPTH frames deep. Prints ns per pair (best of 5 rounds), in
thread CPU time so that other load on the machine does not count.
Run by bench/run_python_bench.sh under the hook with GMEMHOOK_PYTHON=0 and =1.

With EVICT_KB, each pair is followed by a copy of that many KiB, which pushes the frames and
code objects out of the nearer caches as a PyTorch step's own work does between two tensor events
(the walk then reads them from further away; the copy costs every mode alike).

Usage: python3 python_frames_bench.py <libcudart.so> [depth=20] [pairs=100000] [evict_kb=0]
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 20
PAIRS = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
EVICT_KB = int(sys.argv[4]) if len(sys.argv) > 4 else 0
malloc, free = lib.cudaMalloc, lib.cudaFree
malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
free.argtypes = [ctypes.c_void_p]


def python_depth():
    n, f = 0, sys._getframe(1)
    while f is not None:
        n, f = n + 1, f.f_back
    return n


def loop():
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    best = None
    src, dst = bytearray(EVICT_KB << 10), bytearray(EVICT_KB << 10)
    for _ in range(5):
        start = time.thread_time_ns()
        for _ in range(PAIRS):
            malloc(ref, 512)  # the same call site every time: one interned stack
            free(p)
            if EVICT_KB:
                dst[:] = src
        ns = (time.thread_time_ns() - start) / PAIRS
        best = ns if best is None else min(best, ns)
    return best


def recurse(n):
    if n > 0:
        return recurse(n - 1)
    return python_depth(), loop()


def main():
    # <module>, main and loop are 3 of the DEPTH frames the allocation sees.
    depth, ns = recurse(DEPTH - 3)
    print(f"python_frames {depth} pairs {PAIRS} ns_per_pair {ns:.1f} evict_kb {EVICT_KB}")


main()
