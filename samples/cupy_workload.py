#!/usr/bin/env python3
"""cupy_workload.py — CuPy arrays through a memory pool whose allocator counts its own calls.

Every chunk the pool takes from CUDA goes through `counting_malloc`, which allocates with
cupy.cuda.Memory (one cudaMalloc) and counts it; the script prints that count, the bytes, and
the pool's peak total_bytes(). gmemhook's report of the run should show exactly that many
cudaMalloc calls, and the same peak.
"""

import json

import cupy

calls = {"count": 0, "bytes": 0, "chunks": []}


def counting_malloc(size):
    mem = cupy.cuda.Memory(size)
    calls["count"] += 1
    calls["bytes"] += size
    calls["chunks"].append([mem.ptr, size])
    return cupy.cuda.MemoryPointer(mem, 0)


def main():
    pool = cupy.cuda.MemoryPool(counting_malloc)
    cupy.cuda.set_allocator(pool.malloc)
    peak = 0
    kept = []
    for i in range(40):
        a = cupy.random.random((256 + 64 * i, 1024), dtype=cupy.float32)
        b = (a * 2 + 1).sum(axis=0)
        if i % 4 == 0:
            kept.append(b)
        peak = max(peak, pool.total_bytes())
    cupy.cuda.Device().synchronize()
    print("CUPY_STATS " + json.dumps({"malloc_calls": calls["count"], "malloc_bytes": calls["bytes"], "chunks": calls["chunks"],
                                      "pool_peak_total_bytes": peak,
                                      "pool_total_bytes": pool.total_bytes()}), flush=True)


if __name__ == "__main__":
    main()
