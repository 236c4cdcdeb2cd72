"""Which functions of a project run once per iteration of some loop: the call graph, as plain records.

A sync in `mask_rcnn_loss` or `Matcher.__call__` costs as much as one in
the training loop itself when the loop calls it every step, but the loop
may be in another file (`train_loop.py` calls the model, whose `forward`
calls the loss). Each linted file therefore summarises its functions
(`Summary`): which it defines, which it calls once per call of which
(`edges`), which it calls inside a loop (`roots`), and which run on every
step by their role (a torch module's `forward`, a loss, a `*_step`
function). `hot_functions` closes that graph over a whole project (the
runner) or one file (the engine, before it knows the project); a function
is *hot* when every call of it is part of an iteration, and `Hot` says
why, for the message.

A function with a loop of its own (`looping`) is not made hot by its
callers: `validate()` called once per epoch does its per-batch work in its
own loop, which the rules already read as a loop; its top-level reads run
once per epoch. Roles still apply to it.

Plain frozen records without LibCST, so cached results carry them and a
warm run reads them without the parser.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Literal

HotKind = Literal["loop", "forward", "loss", "step"]
ROLE_TEXT = {
    "forward": "a module's forward, run on every step",
    "loss": "a loss, computed on every step",
    "step": "a step function, run on every step",
}


@dataclass(frozen=True)
class CopyHelper:
    """A function of the project that returns its parameter `data` copied to or from the device (`copyhelpers`)."""

    function: str  # qualified name: `pylops.utils.backend.to_cupy`
    library: str  # whose copy it makes: "cupy", "torch", "jax"
    kind: str  # "h2d" | "d2h"
    data: int  # the position of the parameter it copies
    device: int = -1  # the position of its device parameter (`to_device(x, device)`), -1 when it has none
    device_name: str = ""  # that parameter's name, for a call that passes it by keyword
    via: str = ""  # the copy inside, as the catalog shows it (`cupy.asarray`)
    flag: str = ""  # a parameter that picks the copy (`... if as_numpy else x`): a call passing it False copies nothing


@dataclass(frozen=True)
class Summary:
    """What one file tells the project about its functions (qualified names: `pkg.mod.Class.method`)."""

    functions: tuple[str, ...] = ()
    looping: tuple[str, ...] = ()  # functions with a `for`/`while` loop of their own
    bases: tuple[tuple[str, tuple[str, ...]], ...] = ()  # class -> its base classes, as resolved here
    attributes: tuple[tuple[str, str], ...] = ()  # `Class.attr` -> the class it holds (`self.m = Matcher(...)`)
    roles: tuple[tuple[str, HotKind], ...] = ()  # functions that run every step by what they are
    roots: tuple[tuple[str, str, str, int], ...] = ()  # (callee, path, function holding the loop, loop's number)
    edges: tuple[tuple[str, str], ...] = ()  # (caller, callee): one call of the caller makes one of the callee
    hot_here: tuple[str, ...] = ()  # functions this file's own summary makes hot (no need to be told)
    held_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()  # `Class.attr` -> the methods called on `self.attr`
    device_kwargs: tuple[str, ...] = ()  # callees handed device values as keywords (`meter.update(**losses)`)
    copy_helpers: tuple[CopyHelper, ...] = ()  # functions that return a copy of a parameter (`to_cupy(x)`)
    reexports: tuple[tuple[str, str], ...] = ()  # a package's names: `acme.Learner` -> `acme.core.Learner`
    device_args: tuple[tuple[str, str, str], ...] = ()  # (callee, parameter, library or "host"): `arguments`
    # (callee, loop) of `roots` where every call of it in that loop only sums, records or prints what it returns
    metric_roots: tuple[tuple[str, int], ...] = ()
    array_classes: tuple[tuple[str, str], ...] = ()  # record classes whose fields are device arrays -> library
    annotated: tuple[tuple[str, str, str], ...] = ()  # (function, parameter, the class its annotation names)


@dataclass(frozen=True)
class Hot:
    """Why a function runs once per iteration: a loop calls it, or its role, perhaps through a caller."""

    function: str
    kind: HotKind
    path: str = ""  # the loop's file (kind "loop")
    holder: str = ""  # the function the loop is in ("" at module level)
    loop: int = -1  # the loop's number in its file's index
    via: str | None = None  # the hot caller it is reached through
    device_kwargs: bool = False  # some call hands it device values as keywords (its `**kwargs` holds tensors)
    metric: bool = False  # kind "loop", no `via`: every loop that calls it only sums, records or prints its result

    def text(self, path: str, loop_label: Callable[[int], str] | None = None) -> str:
        """`call of `f` (the loop at line 12 calls it through `g`)`, as the file `path` says it.

        A loop in that same file is named by its line (`loop_label` of its
        number); a loop elsewhere by the function it is in and its file.
        """
        through = f" through `{display(self.via)}`" if self.via else ""
        if self.kind == "loop":
            if self.path == path and loop_label is not None:
                at = f"the loop at {loop_label(self.loop)}"
            else:
                at = f"a loop in `{display(self.holder)}` ({self.path})" if self.holder else f"a loop in {self.path}"
            return f"call of `{display(self.function)}` ({at} calls it{through})"
        return f"call of `{display(self.function)}` ({ROLE_TEXT[self.kind]}{through})"


def display(qualname: str) -> str:
    """`Matcher.__call__` for `detectron2.modeling.matcher.Matcher.__call__`: the last two parts when a method."""
    parts = qualname.split(".")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return ".".join(parts[-2:])
    return parts[-1]


class Graph:
    """The summaries of several files joined: name resolution through base classes and held attributes."""

    def __init__(self, summaries: Iterable[Summary]) -> None:
        self.summaries = list(summaries)
        self.functions: set[str] = set()
        self.looping: set[str] = set()
        self.bases: dict[str, tuple[str, ...]] = {}
        self.attributes: dict[str, str] = {}
        for s in self.summaries:
            self.functions.update(s.functions)
            self.looping.update(s.looping)
            self.bases.update(s.bases)
            self.attributes.update(s.attributes)
        self._subclasses: dict[str, list[str]] | None = None
        self._class_names: set[str] | None = None
        self.held_calls: dict[str, set[str]] = {}
        for s in self.summaries:
            for owner, methods in s.held_calls:
                self.held_calls.setdefault(owner, set()).update(methods)
        self._by_tail: dict[str, list[str]] = {}
        for name in self.functions:
            parts = name.split(".")
            for i in range(1, len(parts)):
                self._by_tail.setdefault(".".join(parts[i:]), []).append(name)
        self.reexports = {name: target for s in self.summaries for name, target in s.reexports}
        self.bases = {cls: tuple(self._known_class(b) for b in bases) for cls, bases in self.bases.items()}

    def _known_class(self, base: str) -> str:
        """A base class as the project defines it: `acme.Learner` (a package's re-export) is `acme.core.Learner`.

        A name no file defines is what its package's `__init__` imports under
        it, else the one class of the same package and name, so that its
        subclasses' overrides are found.
        """
        if base in self.bases or "." not in base:
            return base
        if base in self.reexports:
            return self.reexports[base]
        top, last = base.partition(".")[0], base.rpartition(".")[2]
        found = [c for c in self._classes() if c.split(".")[0] == top and c.rpartition(".")[2] == last]
        return found[0] if len(found) == 1 else base

    def _classes(self) -> set[str]:
        if self._class_names is None:
            names = set(self.bases)
            for function in self.functions:
                owner = function.rpartition(".")[0]
                if owner.rpartition(".")[2][:1].isupper():
                    names.add(owner)
            self._class_names = names
        return self._class_names

    def overrides(self, function: str) -> list[str]:
        """`D.m` for every subclass `D` (at any depth) of `C` that redefines `C.m`: what `self.m()` in `C` may run.

        A base class's loop or hot method calling `self._update()` runs the
        subclasses' `_update` (the template-method pattern of iterative
        solvers and trainers), not only the base's stub.
        """
        owner, _, name = function.rpartition(".")
        if self._subclasses is None:
            subs: dict[str, list[str]] = {}
            for cls, bases in self.bases.items():
                for base in bases:
                    subs.setdefault(base, []).append(cls)
            self._subclasses = subs
        out, seen, todo = [], {owner}, [owner]
        while todo:
            for sub in self._subclasses.get(todo.pop(), ()):
                if sub in seen:
                    continue
                seen.add(sub)
                todo.append(sub)
                if f"{sub}.{name}" in self.functions:
                    out.append(f"{sub}.{name}")
        return out

    def resolve(self, callee: str, depth: int = 0) -> str | None:
        """The function a call of `callee` runs: itself, a constructor, an inherited method, a held object's call."""
        if depth > 8:
            return None
        if callee in self.functions:
            return callee
        if callee in self.bases:  # a class called: its constructor
            return self.resolve(callee + ".__init__", depth + 1)
        owner, _, name = callee.rpartition(".")
        if owner in self.attributes:  # `self.matcher(...)` with `self.matcher = Matcher(...)`
            held = self.attributes[owner]
            return self.resolve(f"{held}.__call__", depth + 1) or self.resolve(f"{held}.forward", depth + 1)
        if owner in self.bases:
            for base in self.bases[owner]:
                found = self.resolve(f"{base}.{name}", depth + 1)
                if found is not None:
                    return found
            return None
        tails = self._by_tail.get(callee, [])
        if len(tails) == 1 and "." in callee:
            return tails[0]  # a script importing its sibling module
        return self._duck(owner, name) if owner in self.held_calls else None

    def _duck(self, owner: str, name: str) -> str | None:
        """What `self.alg.update()` runs when `self.alg` is given to the class: the one method that fits.

        `App.__init__(self, alg)` keeps whatever it is handed; the loop
        `while not self.alg.done(): self.alg.update()` tells what it must
        be: an object with `done` and `update`. When every class of the
        project that has all the methods called on `self.alg` runs the same
        `update` (the base class's, inherited), that is the one.
        """
        wanted = self.held_calls[owner]
        found: set[str] = set()
        for cls in self.bases:
            targets = {n: self.resolve(f"{cls}.{n}", 6) for n in wanted}
            if all(targets.values()):
                found.add(targets[name] or "")
        return found.pop() if len(found) == 1 else None


def hot_functions(summaries: Iterable[Summary], seeds: Iterable[Hot] = ()) -> dict[str, Hot]:
    """Every hot function of the summaries, with why: loop roots first, then roles, then their callees."""
    graph = Graph(summaries)
    hot: dict[str, Hot] = {}
    queue: deque[Hot] = deque()

    def add(h: Hot) -> None:
        if h.function not in hot:
            hot[h.function] = h
            queue.append(h)

    rooted: list[tuple[Hot, bool]] = []  # each loop's call, and whether that loop only keeps the result as a metric
    for s in graph.summaries:
        metric = set(s.metric_roots)
        for callee, path, holder, loop in s.roots:
            target = graph.resolve(callee)
            if target is not None and target not in graph.looping:
                rooted.append((Hot(target, "loop", path, holder, loop), (callee, loop) in metric))
    not_kept = {h.function for h, kept in rooted if not kept}
    for h, _ in rooted:
        add(replace(h, metric=h.function not in not_kept))
    for seed in seeds:
        if seed.function in graph.functions:
            add(seed)
    for s in graph.summaries:
        for function, kind in s.roles:
            add(Hot(function, kind))
    callees: dict[str, list[str]] = {}
    for s in graph.summaries:
        for caller, callee in s.edges:
            callees.setdefault(caller, []).append(callee)
    while queue:
        h = queue.popleft()
        for callee in callees.get(h.function, ()):
            target = graph.resolve(callee)
            if target is None or target in hot or target in graph.looping and h.kind == "loop":
                continue  # a step's own helpers run every step, loops of their own or not (`build_targets`)
            add(Hot(target, h.kind, h.path, h.holder, h.loop, h.via or h.function))
        for override in graph.overrides(h.function):
            if override not in graph.looping:
                add(Hot(override, h.kind, h.path, h.holder, h.loop, h.via or h.function))
    handed = {target for s in graph.summaries for callee in s.device_kwargs
              if (target := graph.resolve(callee)) is not None}
    return {q: replace(h, device_kwargs=True) if q in handed else h for q, h in hot.items()}
