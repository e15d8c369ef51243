#!/usr/bin/env python3
"""jax_workload.py — a few JAX computations, for checking gmemhook against JAX's own counters.

Run with XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX otherwise grabs 75% of the GPU up front) and
optionally XLA_PYTHON_CLIENT_ALLOCATOR=platform (one driver allocation per buffer). Prints
device.memory_stats() when JAX provides them.
"""

import json

import jax
import jax.numpy as jnp


def main():
    key = jax.random.PRNGKey(0)
    kept = []
    for i in range(10):
        key, sub = jax.random.split(key)
        x = jax.random.normal(sub, (512 + 128 * i, 1024))
        y = jnp.tanh(x @ x.T).sum()
        kept.append(x[:8])
        y.block_until_ready()
    dev = jax.devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    print("JAX_STATS " + json.dumps({"stats": stats, "platform": dev.platform}), flush=True)


if __name__ == "__main__":
    main()
