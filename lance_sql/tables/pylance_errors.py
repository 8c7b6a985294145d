"""Typed errors for failures inside pylance, named after the object that failed.

pylance refuses damaged manifests before our parser sees them (as ``ValueError``,
``OSError`` or a Rust panic); diagnosing every table first would read each
manifest twice, so the format parser gives its typed verdict only after a failure.
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
