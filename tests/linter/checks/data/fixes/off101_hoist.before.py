import cupy as cp
import torch


def total(x, n):
    s = 0.0
    for i in range(n):
        # the same x every time
        d = cp.asarray(x)
        s += float(d.sum())
    return s


def nested(w, epochs, batches):
    for epoch in range(epochs):
        for batch in batches:
            batch.add_(w.cuda())


def only(x, n):
    while n > 0:
        d = cp.asarray(x)
    return d


def comprehension(x, n):
    return [cp.asarray(x).sum() for _ in range(n)]
