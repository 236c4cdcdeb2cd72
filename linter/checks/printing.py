"""Printing a device value per iteration: OFF301.

`print("loss", loss)` and `logger.debug(f"err {err.sum()}")` turn a device
array into text, and the text needs its values on the host: the formatting
is a download and a wait, although no `.item()` in the line says so. A
log line's f-string is built before the logger decides whether to emit it,
so a disabled `logger.debug(f"...")` still waits on every iteration; the
logger's own `%s` arguments are formatted only when the record is emitted,
and are left alone (the level decides, not the code).

What is printed is read for a person: print every N iterations, or keep
the values on the device and read them once per log interval.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import IndexedCall
from .constants import once
from .file import CheckedFile
from .iteration import iteration_of, over_ranks
from .registry import check

#: methods of a logger (`logger.info(...)`, `logging.debug(...)`, `log.warning(...)`)
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "log", "exception"})


@check("OFF301")
def printed(file: CheckedFile) -> None:
    sem = file.sem
    for call in file.index.calls:
        found = _formatted(file, call)
        if found is None:
            continue
        api, value = found
        it = iteration_of(file, call)
        if it is None or once(call):
            continue
        loop = it.loop
        if loop is not None and (sem.loops.rare_branch(call, loop) or over_ranks(file, loop)
                                 or sem.loops.amortised(call, loop, file.index.loops)):
            continue
        lib = sem.values.device_lib(value, call.scope)
        file.report("OFF301", value, api=api.format(lib=lib), where=it.where(file),
                    advice="print it every N iterations, or keep the values on the device and read them once per "
                           "log interval")


def _formatted(file: CheckedFile, call: IndexedCall) -> tuple[str, cst.BaseExpression] | None:
    """(what formats it, the device value) for a device value that `print` or a log line's f-string formats."""
    node = call.node
    func = node.func
    values = file.sem.values
    if file.sem.names.qualify(func) == "builtins.print":
        for arg in node.args:
            if arg.keyword is None and not arg.star:
                for value in _shown(arg.value):
                    if values.device_lib(value, call.scope) is not None:
                        return "printing a {lib} array", value
        return None
    if isinstance(func, cst.Attribute) and func.attr.value in LOG_METHODS and node.args:
        first = node.args[0].value
        if isinstance(first, cst.FormattedString):
            for value in _shown(first):
                if values.device_lib(value, call.scope) is not None:
                    return "formatting a {lib} array for a log line", value
    return None


def _shown(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values an argument of `print` shows: itself, or the expressions of an f-string."""
    if isinstance(expr, cst.FormattedString):
        return [part.expression for part in expr.parts if isinstance(part, cst.FormattedStringExpression)]
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return []
    return [expr]
