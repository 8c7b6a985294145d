"""Partition specs written as text, Iceberg/Spark style, and warnings about time partitions.

``parse_spec_text("bucket(16, c), days(ts)")`` gives the field dicts ``build_spec``
takes; the terms are listed in ``docs/namespaces.md``. The spec's ``month`` / ``day`` /
``hour`` are ``date_part`` values, not Iceberg's periods since the epoch: the plural
forms expand to the calendar fields that identify one period (and prune ranges).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import source_fields

#: Plural (Iceberg) time transforms and the calendar fields each one expands to.
EXPANSIONS: dict[str, tuple[str, ...]] = {
    "years": ("year",),
    "months": ("year", "month"),
    "days": ("year", "month", "day"),
    "hours": ("year", "month", "day", "hour"),
}

#: Each cyclic time field and the coarser fields it needs to identify one period.
_COARSER: dict[str, tuple[str, ...]] = {
    "month": ("year",),
    "day": ("year", "month"),
    "hour": ("year", "month", "day"),
}
_CYCLE = {"month": "month of year", "day": "day of month", "hour": "hour of day"}
_PLURAL = {"month": "months", "day": "days", "hour": "hours"}

_KEY = "spec"


def is_spec_text(value: Any) -> bool:
    """Whether ``value`` is spec text rather than JSON (a string not starting ``{`` or ``[``)."""
    return isinstance(value, str) and not value.lstrip().startswith(("{", "["))


def parse_spec_text(text: str) -> list[dict[str, Any]]:
    """Field dicts (``build_spec`` form) for an Iceberg-style partition list (SpecError
    names a term that is not a known transform)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    if not isinstance(text, str) or not text.strip():
        raise SpecError("the partition spec text is empty", key=_KEY)
    try:
        select = sqlglot.parse_one(f"SELECT {text}")
    except ParseError as e:
        raise SpecError(f"cannot parse partition spec {text!r}: {e}", key=_KEY) from e
    if not isinstance(select, exp.Select) or any(
        v for k, v in select.args.items() if k != "expressions"
    ):
        raise SpecError(f"not a list of partition terms: {text!r}", key=_KEY)
    out: list[dict[str, Any]] = []
    for i, term in enumerate(select.expressions):
        out.extend(_term(term, f"{_KEY}[{i}]"))
    return out


_NAMED = ("Year", "Month", "Day", "Hour", "Trunc")


def _term(term: Any, key: str) -> list[dict[str, Any]]:
    from sqlglot import exp

    if isinstance(term, exp.Column):
        return [{"source": _column(term, key), "transform": "identity"}]
    if isinstance(term, exp.Anonymous):
        name = str(term.name).lower()
        args = list(term.expressions)
    elif type(term).__name__ in _NAMED:
        name = {"trunc": "truncate"}.get(type(term).__name__.lower(), type(term).__name__.lower())
        args = [term.args[k] for k in term.arg_types if term.args.get(k) is not None]
    else:
        raise SpecError(f"{term.sql()!r} is not a partition transform", key=key)
    if name in ("identity", "year", "month", "day", "hour", *EXPANSIONS):
        if len(args) != 1:
            raise SpecError(f"{name}() takes one column, got {term.sql()!r}", key=key)
        source = _column(args[0], key)
        if name in EXPANSIONS:
            return [{"source": source, "transform": t} for t in EXPANSIONS[name]]
        return [{"source": source, "transform": name}]
    if name in ("bucket", "truncate"):
        numbers = [a for a in args if isinstance(a, exp.Literal) and not a.is_string]
        columns = [a for a in args if a not in numbers]
        if len(numbers) != 1 or not columns or (name == "truncate" and len(columns) != 1):
            raise SpecError(
                f"write {name}(N, column{', ...' if name == 'bucket' else ''}), got {term.sql()!r}",
                key=key,
            )
        n = _positive(numbers[0], key)
        sources = [_column(c, key) for c in columns]
        if name == "truncate":
            return [{"source": sources[0], "transform": "truncate", "width": n}]
        if len(sources) == 1:
            return [{"source": sources[0], "transform": "bucket", "num_buckets": n}]
        return [{"sources": sources, "transform": "multi_bucket", "num_buckets": n}]
    raise SpecError(
        f"unknown partition transform {name!r} in {term.sql()!r} (known: identity, year(s), "
        "month(s), day(s), hour(s), bucket, truncate)",
        key=key,
    )


def _column(node: Any, key: str) -> str:
    from sqlglot import exp

    if not isinstance(node, exp.Column):
        raise SpecError(f"expected a column name, got {node.sql()!r}", key=key)
    return ".".join(str(p.name) for p in node.parts)


def _positive(node: Any, key: str) -> int:
    try:
        n = int(node.this)
    except ValueError:
        n = 0
    if n < 1:
        raise SpecError(f"expected a positive integer, got {node.sql()!r}", key=key)
    return n


def spec_fields(spec: Any) -> Any:
    """The one entry point for a partition spec as a user writes it (Python, CLI, SQL, Spark).

    Text becomes field dicts; a JSON list of field dicts is decoded; plural time names
    (``years`` ... ``hours``) expand as in the text form. The spec's own JSON (an object
    with ``fields``, a ``PartitionSpec``) is returned unchanged.
    """
    import json

    if is_spec_text(spec):
        return parse_spec_text(spec)
    if isinstance(spec, str) and spec.lstrip().startswith("["):
        try:
            spec = json.loads(spec)
        except ValueError as e:
            raise SpecError(f"the partition spec is not valid JSON: {e}", key=_KEY) from e
    if isinstance(spec, (list, tuple)):
        return [f for i, raw in enumerate(spec) for f in _expanded(raw, f"{_KEY}[{i}]")]
    return spec


def _expanded(raw: Any, key: str) -> list[Any]:
    """A convenient field dict whose transform is a plural time name, as calendar fields."""
    if not isinstance(raw, Mapping) or "source_ids" in raw:
        return [raw]
    transform = raw.get("transform")
    kind = transform.get("type") if isinstance(transform, Mapping) else transform
    if not isinstance(kind, str) or kind.lower() not in EXPANSIONS:
        return [raw]
    if "field_id" in raw:
        raise SpecError(
            f"{kind!r} expands to the fields {', '.join(EXPANSIONS[kind.lower()])}: "
            "omit 'field_id' (each gets its default name)",
            key=key,
        )
    rest = {k: v for k, v in raw.items() if k != "transform"}
    return [{**rest, "transform": t} for t in EXPANSIONS[kind.lower()]]


def time_partition_warnings(spec: Any, schema: Any = None) -> list[str]:
    """One message per cyclic time field used without its coarser fields on the same source(s).

    ``spec``: a :class:`~.spec.PartitionSpec`, spec text, or field dicts (naming ``source``
    or ``source_ids``); ``schema`` names source ids in the messages. Such a field mixes
    periods (Jan 3 and Feb 3 share a partition) and cannot prune a time range.
    """
    by_source = _time_fields(spec, schema)
    out = []
    for source, kinds in by_source.items():
        for kind in ("month", "day", "hour"):
            if kind not in kinds:
                continue
            missing = [c for c in _COARSER[kind] if c not in kinds]
            if missing:
                out.append(
                    f"partition field {kinds[kind]!r} is {kind}({source}), the {_CYCLE[kind]}, "
                    f"without {' and '.join(f'{m}({source})' for m in missing)}: it puts "
                    f"rows of different {_PLURAL[kind]} in one partition and cannot prune a "
                    f"time range; use {_PLURAL[kind]}({source}) (= "
                    f"{', '.join(f'{t}({source})' for t in EXPANSIONS[_PLURAL[kind]])})"
                )
    return out


def _time_fields(spec: Any, schema: Any) -> dict[str, dict[str, str]]:
    """source label -> {time transform -> field id (or label)} for every time field."""
    names: dict[int, str] = {}
    if schema is not None:
        names = {fid: path for fid, (path, _, _) in source_fields(schema).items()}
    if hasattr(spec, "fields") and hasattr(spec, "to_json"):  # a PartitionSpec
        items: Iterable[Any] = [f.to_json() for f in spec.fields]
    elif isinstance(spec, str):
        items = spec_fields(spec)
        if isinstance(items, Mapping):
            items = items.get("fields", [])
    elif isinstance(spec, Mapping):
        items = spec.get("fields", [])
    else:
        items = spec
    out: dict[str, dict[str, str]] = {}
    for raw in items:
        obj = raw.to_json() if hasattr(raw, "to_json") else dict(raw)
        transform = obj.get("transform")
        kind = transform.get("type") if isinstance(transform, Mapping) else transform
        if kind not in ("year", "month", "day", "hour"):
            continue
        source = _source_label(obj, names)
        if source is None:
            continue
        out.setdefault(source, {}).setdefault(kind, str(obj.get("field_id") or f"{source}_{kind}"))
    return out


def _source_label(obj: Mapping[str, Any], names: Mapping[int, str]) -> str | None:
    srcs: Sequence[Any] | None = obj.get("sources")
    if srcs is None and "source" in obj:
        srcs = [obj["source"]]
    if srcs is None and "source_ids" in obj:
        srcs = [names.get(s, f"field {s}") for s in obj["source_ids"]]
    if not srcs:
        return None
    return ", ".join(str(s) for s in srcs)


#: the text form's name of a stored transform type, where the two differ
_TEXT_NAMES = {"multi_bucket": "bucket"}


def field_text(field: Mapping[str, Any], names: Mapping[int, str]) -> str:
    """``field_id=bucket(16, customer_id)``: a stored spec field in the text form, sources
    named by column (``names``: field id -> column name)."""
    t = field.get("transform")
    if t is None:
        return f"{field['field_id']}=<{field.get('expression')}>"
    cols = [names.get(s, f"<field {s}>") for s in field.get("source_ids", [])]
    arg = t.get("num_buckets") or t.get("width")
    kind = _TEXT_NAMES.get(t["type"], t["type"])
    args = ", ".join([str(arg), *cols] if arg else cols)
    return f"{field['field_id']}={kind}({args})"
