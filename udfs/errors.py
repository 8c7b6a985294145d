"""The two errors :mod:`udfs` raises on purpose: builtin ``TypeError`` / ``ValueError``
subclasses carrying the object at fault, so the SQL layer can re-raise with context."""

from __future__ import annotations

from typing import Any


class UnsupportedTypeError(TypeError):
    """A function was given an Arrow type it does not define a result for."""

    def __init__(self, function: str, arrow_type: Any, detail: str | None = None) -> None:
        message = f"{function}: unsupported Arrow type {arrow_type}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
        self.function = function
        self.arrow_type = arrow_type


class ExpressionError(ValueError):
    """A partition expression is invalid, not allowed, or not of its declared type."""

    def __init__(self, expression: str, problem: str, *, part: str | None = None) -> None:
        super().__init__(f"partition expression {expression!r}: {problem}")
        self.expression = expression
        self.part = part
