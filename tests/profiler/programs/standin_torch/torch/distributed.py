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
