#!/usr/bin/env python3
"""cuda_graph.py — captures a small forward pass in a torch CUDA graph under PyTorch's
cudaMallocAsync backend and replays it N times.

    gmemhook run -o runs/graph -- python3 samples/cuda_graph.py --replays 100
    gmemhook summary runs/graph

What the report should show:
- the warm-up iterations' allocations (cudaMallocAsync / cudaFreeAsync on the side stream);
- the allocations made while the graph was captured, once each: under stream capture a
  cudaMallocAsync does not allocate, it becomes a memory node of the graph, but it is still a
  call gmemhook records, with the stack of the capture (torch.cuda.graph in this file);
- nothing from the replays: a replay runs the graph's memory nodes inside cudaGraphLaunch, from
  the graph's own memory pool, and makes no allocation call, so the event count does not grow
  with --replays. The graph's physical memory (cudaDeviceGetGraphMemAttribute) is therefore not
  in the report beyond what the capture recorded.
The script prints torch.cuda.max_memory_allocated() to compare with the report's peak (on an
H200 with torch 2.11: 73 events whether --replays is 10 or 100). At exit PyTorch warns
"Attempting uncaptured free of a captured allocation" for the graph's output tensor, freed after
the capture: expected here.
"""

import argparse
import os

# Before torch initialises CUDA: the backend is chosen once, at the first allocation.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")

import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replays", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=2048)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.GELU(),
        torch.nn.Linear(args.width, args.width), torch.nn.GELU(),
        torch.nn.Linear(args.width, args.width),
    ).cuda()
    static_in = torch.randn(args.batch, args.width, device="cuda")

    # Warm up on a side stream, as torch.cuda.graph requires (lazy init, cuBLAS workspaces).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_out = model(static_in)

    for _ in range(args.replays):
        static_in.normal_()  # new input in place: a new tensor would be an allocation per replay
        graph.replay()
    torch.cuda.synchronize()

    print(f"allocator {torch.cuda.get_allocator_backend()} replays {args.replays} "
          f"checksum {static_out.float().sum().item():.3f}", flush=True)
    print(f"MAX_MEMORY_ALLOCATED {torch.cuda.max_memory_allocated()}", flush=True)


if __name__ == "__main__":
    main()
