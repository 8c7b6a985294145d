"""The typed errors every layer of lance-sql raises: catch ``LanceSqlError`` for anything
this library refuses, or a subclass; each names the object at fault in its message."""

from __future__ import annotations


class LanceSqlError(Exception):
    """Base class of every error lance-sql raises on purpose."""


class FormatError(LanceSqlError):
    """A file or metadata document is truncated, corrupted or not Lance at all."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class NotFoundError(LanceSqlError, FileNotFoundError):
    """A dataset, version, tag, namespace or partition table does not exist."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        LanceSqlError.__init__(self, f"{path}: {message}" if path else message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnsupportedFeatureError(LanceSqlError):
    """The data uses a feature this reader does not understand (e.g. unknown flags)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class SpecError(LanceSqlError, ValueError):
    """A partition spec, namespace schema or expression is invalid.

    ``key`` names the JSON key or object at fault (for example
    ``partition_spec_v2.fields[1].transform.num_buckets``).
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


class SchemaMismatchError(LanceSqlError, ValueError):
    """Data written to a table or namespace does not match its schema."""


class PartitionSchemaError(SchemaMismatchError):
    """A partition table's column does not have the namespace column's type (never cast)."""

    def __init__(
        self, *, table: str, column: str, table_column: str, expected: object, actual: object
    ) -> None:
        super().__init__(
            f"partition table {table!r}: column {table_column!r} (namespace column "
            f"{column!r}) has type {actual}, the namespace schema says {expected}"
        )
        self.table = table
        self.column = column
        self.table_column = table_column
        self.expected = expected
        self.actual = actual


class ManifestDamagedError(FormatError):
    """``__manifest`` lost what a partitioned namespace needs (e.g. rewritten by another
    writer): ``missing`` names each lost part; ``lance-sql repair`` rebuilds them."""

    def __init__(self, message: str, *, path: str | None = None, missing: list[str]) -> None:
        super().__init__(message, path=path)
        self.missing = list(missing)


class UnsafeLocationError(LanceSqlError):
    """A stored location points outside the namespace root (absolute path, `..`, scheme)."""


class CommitConflictError(LanceSqlError):
    """A concurrent commit changed what this commit depends on; it was not applied."""


class PlanningError(LanceSqlError):
    """A query or filter cannot be planned (e.g. an unparseable filter string)."""


class NamespaceExistsError(CommitConflictError):
    """``create`` found a namespace at its root (``mode="exist_ok"`` / ``"overwrite"`` allow it)."""


class IsADatasetError(NotFoundError):
    """A partitioned namespace was expected where a plain Lance dataset is."""


class IsANamespaceError(FormatError):
    """A Lance dataset was expected where a partitioned namespace is."""


class PathIsAFileError(LanceSqlError, NotADirectoryError):
    """A dataset or namespace path names an existing regular file."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type name when the message is empty)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_SCHEMA_TEXTS = ("Schema error", "Inconsistent data length", "Cannot automatically convert")


def datafusion_error_kinds(exc: BaseException) -> frozenset[str]:
    """What an (untyped) DataFusion error's text says went wrong: the keys below."""
    text = str(exc)
    found = {
        "not_found": "not found" in text and "table" in text,
        "partitioned_insert": "Partitioned inserts not yet supported" in text,
        "not_null": "non-nullable" in text,
        "schema": any(s in text for s in _SCHEMA_TEXTS),
        "cast": "cast" in text.lower(),
    }
    return frozenset(kind for kind, hit in found.items() if hit)
