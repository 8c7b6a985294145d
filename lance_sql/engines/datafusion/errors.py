"""Typed lance-sql errors back out of DataFusion.

A lance-sql error raised in a provider callback comes out of ``collect()`` as a
bare ``Exception`` whose text renders it (pyo3's ``PyErr { type: ..., value: ...}``
while planning, ``External error: X: message`` while executing; nested queries nest
them). :func:`recording` remembers each error as it leaves a callback;
:func:`typed_error` finds it (else rebuilds it) from DataFusion's text.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import importlib
import re
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

import lance_sql.errors as lance_errors
from lance_sql.errors import LanceSqlError

#: Recorded errors kept at most (each holds its traceback's frames until recovered or evicted).
MAX_RECORDED = 64

_lock = threading.Lock()
_recorded: collections.OrderedDict[int, LanceSqlError] = collections.OrderedDict()

# pyo3's Debug of a PyErr: the class (module-qualified) and the value's repr.
_PYERR = re.compile(r"PyErr \{ type: <class '(?P<cls>[\w.]+)'>, value: (?P<name>\w+)\(")
_PYERR_END = re.compile(r"\), traceback: (?:None|Some\()")
# PyErr's Display, ``Name: message``, after the start or another ``...: `` prefix.
_DISPLAY = re.compile(r"(?:^|: )(?P<name>[A-Z]\w*): ")


def record(exc: BaseException) -> None:
    """Remember ``exc`` (when it is a lance-sql error) as raised into DataFusion."""
    if not isinstance(exc, LanceSqlError):
        return
    with _lock:
        _recorded.pop(id(exc), None)
        _recorded[id(exc)] = exc
        while len(_recorded) > MAX_RECORDED:
            _recorded.popitem(last=False)


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Record any lance-sql error leaving the block (it still propagates); also a decorator."""
    try:
        yield
    except LanceSqlError as exc:
        record(exc)
        raise


def typed_error(exc: BaseException) -> LanceSqlError | None:
    """The lance-sql error that DataFusion's exception ``exc`` carries, or None.

    The recorded original whose rendering appears earliest in the text, else one
    rebuilt from a ``PyErr`` rendering of a lance-sql class.
    """
    if isinstance(exc, LanceSqlError):
        return exc
    text = str(exc)
    if not text:
        return None
    texts = list(_texts(text, depth=0))
    found = _find_recorded(texts)
    if found is not None:
        return found
    rebuilt = _rebuild_debug(texts) or _rebuild_display(texts)
    if rebuilt is not None:
        rebuilt.__cause__ = exc
    return rebuilt


def reraise_typed(exc: BaseException) -> NoReturn:
    """Raise the lance-sql error ``exc`` carries (see :func:`typed_error`), else ``exc``."""
    typed = typed_error(exc)
    if typed is None or typed is exc:
        raise exc
    raise typed  # a recorded original keeps its own cause; DataFusion's is its context


@contextlib.contextmanager
def typed_errors() -> Iterator[None]:
    """Inside, a DataFusion exception carrying a lance-sql error is raised as that error;
    also a decorator."""
    try:
        yield
    except LanceSqlError:
        raise
    except Exception as exc:  # PanicException (a BaseException) is never ours to map
        reraise_typed(exc)


class TypedStream:
    """A record batch stream whose iteration raises typed errors.

    A stream runs the plan while iterated, after ``execute_stream`` returned.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> TypedStream:
        return self

    def __next__(self) -> Any:
        with typed_errors():
            return next(self._stream)

    def next(self) -> Any:
        with typed_errors():
            return self._stream.next()

    def __aiter__(self) -> TypedStream:
        return self

    async def __anext__(self) -> Any:
        with typed_errors():
            return await self._stream.__anext__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# -- finding the error in DataFusion's text ------------------------------------------------


def _texts(text: str, depth: int) -> Iterator[str]:
    """``text``, then the string arguments of every ``PyErr`` value in it, recursively."""
    yield text
    if depth >= 4:
        return
    for _, args in _pyerrs(text):
        for arg in args:
            if isinstance(arg, str) and arg:
                yield from _texts(arg, depth + 1)


def _pyerrs(text: str) -> Iterator[tuple[re.Match[str], tuple[object, ...]]]:
    """Each top-level ``PyErr`` rendering in ``text`` with its value's arguments."""
    done = 0
    for match in _PYERR.finditer(text):
        if match.start() < done:
            continue
        found = _args_at(text, match.end() - 1)
        if found is None:
            continue
        args, done = found
        yield match, args


def _args_at(text: str, open_paren: int) -> tuple[tuple[object, ...], int] | None:
    """The literal arguments of the call whose ``(`` is at ``open_paren``, and where they end."""
    for end in _PYERR_END.finditer(text, open_paren):
        source = text[open_paren : end.start() + 1]
        try:
            value = ast.literal_eval(source)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        return (value if isinstance(value, tuple) else (value,)), end.start() + 1
    return None


def _renderings(exc: LanceSqlError) -> tuple[str, str]:
    return repr(exc), f"{type(exc).__name__}: {exc}"


def _find_recorded(texts: list[str]) -> LanceSqlError | None:
    with _lock:
        candidates = list(reversed(_recorded.values()))  # newest first
    for text in texts:
        best: tuple[int, LanceSqlError] | None = None
        for exc in candidates:
            for rendering in _renderings(exc):
                at = text.find(rendering)
                if at >= 0 and (best is None or at < best[0]):
                    best = (at, exc)
        if best is not None:
            with _lock:
                _recorded.pop(id(best[1]), None)
            return best[1]
    return None


def _rebuild_debug(texts: list[str]) -> LanceSqlError | None:
    """A lance-sql error rebuilt from the first ``PyErr { type: ..., value: ... }`` naming one."""
    for text in texts:
        for match, args in _pyerrs(text):
            cls = _lance_class(match.group("cls"))
            if cls is None or cls.__name__ != match.group("name"):
                continue
            if all(isinstance(a, str) for a in args):
                return _instance(cls, args)
    return None


def _rebuild_display(texts: list[str]) -> LanceSqlError | None:
    """A lance-sql error rebuilt from ``Name: message`` (the message runs to the text's end)."""
    for text in texts:
        for match in _DISPLAY.finditer(text):
            cls = getattr(lance_errors, match.group("name"), None)
            if isinstance(cls, type) and issubclass(cls, LanceSqlError):
                return _instance(cls, (text[match.end() :].strip(),))
    return None


def _lance_class(qualified: str) -> type[LanceSqlError] | None:
    module, _, name = qualified.rpartition(".")
    if not (module == "lance_sql" or module.startswith("lance_sql.")):
        return None  # never import anything a message names outside this package
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return cls if isinstance(cls, type) and issubclass(cls, LanceSqlError) else None


def _instance(cls: type[LanceSqlError], args: tuple[object, ...]) -> LanceSqlError:
    """An instance of ``cls`` whose ``str`` is exactly the message (constructors not called)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    for attr in ("path", "key"):
        if attr not in exc.__dict__:
            setattr(exc, attr, None)
    return exc
