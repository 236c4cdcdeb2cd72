"""A JAX loop uploading invariant data every step, then waiting for a scalar; the upload must be line 8."""
import jax
import numpy as np

x, w = np.ones((512, 512), np.float32), jax.device_put(np.full((512, 512), 0.5, np.float32))
f = jax.jit(lambda d, w: (d @ w).sum())
for step in range(200):
    d = jax.device_put(x)  # site: put
    float(f(d, w))  # site: sync
