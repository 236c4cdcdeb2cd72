"""What real JAX calls must copy (`jaxcalls.expected`) and where the wrapped calls were made; run by
test_runtimecopies.py in a fresh interpreter. JAX's CPU arrays are taken for a GPU's, so that it runs with or
without one. Prints `reading ok wrappers ok`; an assertion error otherwise."""

import threading

import jax
import jax.numpy as jnp
import numpy as np

from profiler.sources.cupti import jaxcalls

jaxcalls.DEVICE_PLATFORMS = jaxcalls.DEVICE_PLATFORMS | {"cpu"}


def line_of(marker: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(marker))


def reading() -> None:
    x = np.ones(1024, dtype=np.float32)
    d = jax.device_put(x)
    assert jaxcalls.expected("h2d", x, d) == (("h2d", 4096),)
    assert jaxcalls.expected("h2d", d, jax.device_put(d)) == (), "already on the device: no copy"
    assert jaxcalls.expected("h2d", (x, d), jax.device_put((x, d))) == (("h2d", 4096),), "per leaf"
    wide = np.ones(8)  # float64 made float32 on the host before the upload: the bytes that move are the result's
    assert jaxcalls.expected("h2d", wide, jnp.asarray(wide)) == (("h2d", 32),)
    assert jaxcalls.expected("h2d", [1.0, 2.0], jnp.array([1.0, 2.0])) == (("h2d", 8),)
    assert jaxcalls.expected("h2d", [d, d], jnp.array([d, d])) == (), "stacked on the device"
    assert jaxcalls.expected("h2d", np.ones(0), jnp.asarray(np.ones(0))) == ()
    assert jaxcalls.expected("d2h", {"a": d, "b": x}, None) == (("d2h", 4096),), "only the device leaves come back"
    traced = []

    @jax.jit
    def inside(a):
        traced.append(jaxcalls.expected("h2d", a, jax.device_put(a)))
        return a

    inside(d)
    assert traced == [()], "inside jit the arguments are tracers: no copy"
    print("reading ok")


def wrappers() -> None:
    assert jaxcalls.wrap_jax() == 4 and jaxcalls.wrap_jax() == 0, "wrapped once"
    calls = []
    x = np.arange(256, dtype=np.float32)
    d = jax.device_put(x)  # marker: unheard
    stop = jaxcalls.listen(calls.append)
    try:
        d = jax.device_put(x)  # marker: device_put
        jax.device_put(d)  # marker: on the device
        jnp.asarray(x)  # marker: asarray
        jnp.array(x)  # marker: array
        jax.device_get(d)  # marker: device_get
    finally:
        stop()
    got = [(c.function, c.site[1] if c.site else 0, c.copies) for c in calls]
    assert got == [("jax.device_put", line_of("# marker: device_put"), (("h2d", 1024),)),
                   ("jax.numpy.asarray", line_of("# marker: asarray"), (("h2d", 1024),)),
                   ("jax.numpy.array", line_of("# marker: array"), (("h2d", 1024),)),
                   ("jax.device_get", line_of("# marker: device_get"), (("d2h", 1024),))], \
        ("the call of an array already on the device asks for nothing; no call is kept while nobody listens", got)
    assert all(c.thread == threading.get_ident() and c.start_ns <= c.end_ns for c in calls)
    assert jax.device_put(x).shape == x.shape, "the wrapped call returns what JAX returns"
    print("wrappers ok")


reading()
wrappers()
