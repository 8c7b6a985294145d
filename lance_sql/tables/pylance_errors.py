"""Typed errors for failures inside pylance, named after the object that failed.

pylance reads a Lance manifest before this project's own parser sees it, and
its refusals arrive as ``ValueError``/``OSError``/``ArrowInvalid`` or even as
a Rust panic (``pyo3_runtime.PanicException``, a ``BaseException``). Checking
every table with :func:`~lance_sql.format.metadata.open_metadata` first would
read each manifest twice on the hot path, so the diagnosis runs only after a
failure: the format layer's parser then says precisely what is wrong (unknown
reader flags -> ``UnsupportedFeatureError``, damage -> ``FormatError``,
missing -> ``NotFoundError``), and the error keeps the caller's description of
the object (a partition table's object id, ``__manifest``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from lance_sql.errors import (
    FormatError,
    LanceSqlError,
    NotFoundError,
    UnsupportedFeatureError,
    first_line,
)
from lance_sql.format.metadata import open_metadata

_NEVER_WRAPPED = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)


def diagnose(
    uri: str, version: int | None, storage_options: Mapping[str, str] | None
) -> LanceSqlError | None:
    """The format layer's typed verdict on the table at ``uri`` (None: it finds nothing wrong)."""
    try:
        metadata = open_metadata(uri, version, storage_options=storage_options)
        metadata.schema  # noqa: B018  (parse the schema and fragments too)
        metadata.fragments  # noqa: B018
    except LanceSqlError as exc:
        return exc
    except Exception:  # the parser failing untyped is no better a verdict than pylance's
        return None
    return None


@contextmanager
def pylance_errors(
    what: str,
    uri: str,
    *,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    missing: type[LanceSqlError] = NotFoundError,
) -> Iterator[None]:
    """Turn any failure of the pylance calls inside into a typed error naming ``what``.

    The type is the format parser's verdict when it has one, else ``missing``
    for I/O errors and ``FormatError`` for the rest.
    """
    try:
        yield
    except LanceSqlError:
        raise
    except BaseException as exc:
        if isinstance(exc, _NEVER_WRAPPED):
            raise
        text = first_line(exc)[:200]
        verdict = diagnose(uri, version, storage_options)
        if isinstance(verdict, UnsupportedFeatureError | FormatError | NotFoundError):
            reason = str(verdict).removeprefix(f"{verdict.path}: ")
            raise type(verdict)(f"{what} cannot be read: {reason}", path=uri) from exc
        kind = missing if isinstance(exc, OSError | ValueError) else FormatError
        raise kind(f"{what} cannot be read: {text}", path=uri) from exc
