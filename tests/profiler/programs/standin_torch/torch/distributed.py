"""The stand-in's torch.distributed: collectives that take a tensor and return at once (every rank is alone)."""

from __future__ import annotations

from typing import Any


def is_available() -> bool:
    return True


def all_reduce(tensor: Any, op: Any = None, group: Any = None, async_op: bool = False) -> None:
    return None


def broadcast(tensor: Any, src: int = 0, group: Any = None, async_op: bool = False) -> None:
    return None


def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None, async_op: bool = False) -> None:
    return None


def barrier(group: Any = None, async_op: bool = False) -> None:
    return None


def init_process_group(backend: str | None = None, **kwargs: Any) -> None:
    return None


def destroy_process_group(group: Any = None) -> None:
    return None


def isend(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> None:
    return None


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0) -> None:
    return None


class P2POp:
    """As PyTorch's: the op must *be* this module's isend or irecv (a recording that wraps only the package's
    names, not the module's own, breaks this check)."""

    def __init__(self, op: Any, tensor: Any, peer: int) -> None:
        if op not in [isend, irecv]:
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer = op, tensor, peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[None]:
    return [p.op(p.tensor, p.peer) for p in p2p_op_list]


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """As PyTorch's: the object pickled into a byte tensor, its size all-gathered, then the bytes."""
    import pickle

    import numpy as np

    from . import Tensor

    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
    size = np.array([data.size], dtype=np.int64)
    all_gather([Tensor(size.copy()) for _ in object_list], Tensor(size), group=group)
    all_gather([Tensor(data.copy()) for _ in object_list], Tensor(data), group=group)
    for i in range(len(object_list)):
        object_list[i] = obj


def get_rank() -> int:
    import os

    return int(os.environ.get("RANK", "0"))


def get_world_size() -> int:
    import os

    return int(os.environ.get("WORLD_SIZE", "1"))
