"""Any-type, any-arity ``murmur3`` / ``murmur3_multi`` for a DataFusion SessionContext.

A Python UDF has one exact signature, so each call's name token is renamed to a
typed UDF registered for its argument types, which DataFusion reports itself:
the call is planned under ``EXPLAIN`` as a probe no type coerces to, and the
coercion error names the types. Why: docs/engine-notes.md. Cached per context by
query text and the schemas of the tables it names.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import datafusion
import pyarrow as pa

from lance_sql.engines.datafusion.functions import (
    HASH_KERNELS,
    FunctionArityError,
    UnsupportedFunctionArgumentError,
)
from lance_sql.engines.datafusion.sql_tokens import (
    Call,
    depths_of,
    find_calls,
    has_alias,
    has_typed_call,
    query_text,
    select_items,
    splice,
    tokens_of,
)
from lance_sql.tables.dataset_cache import OpenCache
from udfs.canonical import is_supported

_PROBE_TYPE = pa.struct([pa.field("__lance_probe__", pa.null())])
_PROBE_PREFIX = "__lance_probe_"
_PROBE_ERROR = re.compile(r"call to '__lance_probe_(\d+)_(\d+)' function: coercion from ")
_PROBE_ERROR_END = " to the signature "
_CACHE_SIZE = 512
_MAX_ROUNDS = 1000


@dataclass
class _ContextState:
    lock: threading.Lock
    registered: set[str]
    cache: OpenCache[tuple[set[str], tuple[Any, ...], str]]


_STATES: weakref.WeakKeyDictionary[Any, _ContextState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state(ctx: Any) -> _ContextState:
    with _STATES_LOCK:
        state = _STATES.get(ctx)
        if state is None:
            state = _ContextState(threading.Lock(), set(), OpenCache(_CACHE_SIZE))
            _STATES[ctx] = state
        return state


# --- typed UDFs -------------------------------------------------------------------


def _type_key(t: pa.DataType) -> str:
    text = str(t)
    if re.fullmatch(r"[a-z0-9_]+", text):
        return text
    clean = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    return f"{clean}_{digest}"


def typed_name(function: str, types: list[pa.DataType]) -> str:
    """The registered name of ``function`` for exactly these argument types."""
    return f"__lance_{function}__" + "__".join(_type_key(t) for t in types)


def _make_udf(function: str, types: list[pa.DataType], name: str) -> Any:
    kernel = HASH_KERNELS[function][0]

    def impl(*columns: pa.Array) -> pa.Array:
        return kernel(*columns)

    return datafusion.udf(impl, list(types), pa.int32(), "immutable", name)


def _probe_name(index: int, arity: int) -> str:
    return f"{_PROBE_PREFIX}{index}_{arity}"


def _make_probe(name: str, arity: int) -> Any:
    def never_called(*columns: pa.Array) -> pa.Array:  # probes are only planned
        return pa.nulls(len(columns[0]), pa.int32())

    return datafusion.udf(never_called, [_PROBE_TYPE] * arity, pa.int32(), "immutable", name)


def _ensure(ctx: Any, state: _ContextState, name: str, factory: Any) -> None:
    with state.lock:
        if name in state.registered:
            return
        ctx.register_udf(factory())
        state.registered.add(name)


def register_typed(ctx: Any, function: str, types: list[pa.DataType]) -> str:
    """Register (once) the typed implementation of ``function`` and return its name."""
    for t in types:
        if not is_supported(t):
            raise UnsupportedFunctionArgumentError(function, t)
    name = typed_name(function, types)
    _ensure(ctx, _state(ctx), name, lambda: _make_udf(function, types, name))
    return name


# --- readable output column names ---------------------------------------------------

#: A typed call in a DataFusion column name: ``__lance_murmur3__int64(`` -> ``murmur3(``.
_TYPED_CALL = re.compile(r"__lance_(murmur3(?:_multi)?)__[a-z0-9_]*\(")


def readable_name(column_name: str) -> str:
    """The name DataFusion would give the column if the typed UDFs were called ``murmur3``."""
    return _TYPED_CALL.sub(r"\1(", column_name)


def _alias_select_list(ctx: Any, sql: str, ordinal: int) -> str:
    """Alias the unaliased typed calls of the ``ordinal``-th SELECT's list (see below)."""
    tokens = tokens_of(sql)
    selects = [i for i, t in enumerate(tokens) if t.kind == "SELECT"]
    if ordinal >= len(selects):
        return sql
    select = selects[ordinal]
    candidates = [
        item
        for item in select_items(tokens, select)
        if has_typed_call(item) and not has_alias(item)
    ]
    if not candidates:
        return sql
    query = query_text(sql, tokens, depths_of(t.kind for t in tokens), select)
    if query is None:
        return sql
    try:
        names = datafusion.SessionContext.sql(ctx, query).schema().names
    except Exception:  # e.g. a correlated subquery: its names are never seen anyway
        return sql
    typed = [name for name in names if _TYPED_CALL.search(name)]
    if len(typed) != len(candidates):
        return sql
    parts: list[str] = []
    pos = 0
    for item, name in zip(candidates, typed, strict=True):
        end = item[-1].end
        alias = readable_name(name).replace('"', '""')
        parts.append(f'{sql[pos:end]} AS "{alias}"')
        pos = end
    parts.append(sql[pos:])
    return "".join(parts)


def with_readable_names(ctx: Any, sql: str) -> str:
    """Alias every unaliased typed call in a select list with its readable name.

    Each such select list is planned (nothing runs) for the names DataFusion gives,
    innermost first; a list that cannot be matched one to one or planned on its own
    keeps the typed names.
    """
    if "__lance_murmur3" not in sql:
        return sql
    tokens = tokens_of(sql)
    if not tokens or tokens[0].kind not in ("SELECT", "WITH", "CREATE"):
        return sql
    depths = depths_of(t.kind for t in tokens)
    selects = [(depths[i], i) for i, t in enumerate(tokens) if t.kind == "SELECT"]
    order = sorted(range(len(selects)), key=lambda k: (-selects[k][0], -selects[k][1]))
    for ordinal in order:  # aliases add no SELECT token: ordinals stay valid
        sql = _alias_select_list(ctx, sql, ordinal)
    return sql


# --- asking DataFusion for types ----------------------------------------------------


def _split_types(text: str) -> list[str]:
    """Split DataFusion's ``T1, T2(a, b), T3("x")`` at top-level commas."""
    if not text:
        return []
    tokens = tokens_of(text)
    depths = depths_of(t.kind for t in tokens)
    commas = [t for t, d in zip(tokens, depths, strict=True) if t.kind == "COMMA" and d == 0]
    starts = [0, *(c.end for c in commas)]
    ends = [*(c.start for c in commas), len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends, strict=True)]


@functools.lru_cache(maxsize=1)
def scratch_context() -> Any:
    """A plain DataFusion context for planning probes (types, literal coercion)."""
    return datafusion.SessionContext()


@functools.cache
def _arrow_type(type_text: str, function: str) -> pa.DataType:
    """DataFusion's display of a type -> pyarrow, by DataFusion parsing it (``arrow_cast``)."""
    literal = type_text.replace("'", "''")
    try:
        df = datafusion.SessionContext.sql(
            scratch_context(), f"SELECT arrow_cast(NULL, '{literal}') AS v"
        )
        return df.schema().field(0).type
    except Exception as exc:
        raise UnsupportedFunctionArgumentError(function, type_text) from exc


def _planning_error(ctx: Any, sql: str) -> str | None:
    """Plan ``sql`` under EXPLAIN (never executed); the error text, or None if it plans."""
    head = sql.lstrip()[:7].lower()
    text = sql if head.startswith("explain") else f"EXPLAIN {sql}"
    try:
        df = datafusion.SessionContext.sql(ctx, text)
        plan = str(df.optimized_logical_plan())
    except Exception as exc:
        return str(exc)
    if "logical_optimization_succeeded: false" in plan:
        return plan.replace('\\"', '"').replace("\\\\", "\\")
    return None


def _probe_result(error: str) -> tuple[int, list[str]] | None:
    """(call index, argument type names) from DataFusion's coercion error for a probe."""
    match = _PROBE_ERROR.search(error)
    if match is None:
        return None
    end = error.find(_PROBE_ERROR_END, match.end())
    if end < 0:
        return None
    return int(match.group(1)), _split_types(error[match.end() : end])


def _resolve_groups(
    ctx: Any, state: _ContextState, sql: str, calls: list[Call], group_of: list[int]
) -> list[str | None]:
    """Typed names per call; calls in one group share a probe and so a resolution."""
    n_groups = max(group_of) + 1
    resolved: list[str | None] = [None] * n_groups
    arity = {group_of[i]: call.arity for i, call in enumerate(calls)}
    function = {group_of[i]: call.function for i, call in enumerate(calls)}
    for _ in range(min(n_groups + 1, _MAX_ROUNDS)):
        pending = [g for g in range(n_groups) if resolved[g] is None]
        if not pending:
            break
        for g in pending:
            probe = _probe_name(g, arity[g])
            _ensure(ctx, state, probe, lambda p=probe, a=arity[g]: _make_probe(p, a))
        attempt = [resolved[g] or _probe_name(g, arity[g]) for g in group_of]
        error = _planning_error(ctx, splice(sql, calls, attempt))
        if error is None:  # every remaining probe had only NULL arguments
            for g in pending:
                resolved[g] = register_typed(ctx, function[g], [pa.null()] * arity[g])
            break
        found = _probe_result(error)
        if found is None or found[0] >= n_groups or resolved[found[0]] is not None:
            break  # the query fails for another reason
        g, type_texts = found
        types = [_arrow_type(text, function[g]) for text in type_texts]
        if len(types) != arity[g]:
            break
        resolved[g] = register_typed(ctx, function[g], types)
    return [resolved[g] for g in group_of]


def _resolve(ctx: Any, state: _ContextState, sql: str, calls: list[Call]) -> tuple[str, bool]:
    """Rewrite ``sql``; the flag says whether every call was resolved.

    Calls are probed one by one; if that cannot plan (``GROUP BY murmur3(x)`` matches
    expressions by text), calls with identical text are probed as one.
    """
    for call in calls:
        if call.arity == 0 or (HASH_KERNELS[call.function][1] and call.arity != 1):
            raise FunctionArityError(call.function, call.arity)
    names = _resolve_groups(ctx, state, sql, calls, list(range(len(calls))))
    keys = [call.key for call in calls]
    if any(n is None for n in names) and len(set(keys)) < len(keys):
        first: dict[str, int] = {}
        group_of = [first.setdefault(k, len(first)) for k in keys]
        names = _resolve_groups(ctx, state, sql, calls, group_of)
    return splice(sql, calls, names), all(n is not None for n in names)


def _fingerprint(ctx: Any, identifiers: set[str]) -> tuple[Any, ...]:
    """Schemas of every registered table the query names, in every catalog (cache validity)."""
    try:
        found = []
        for catalog_name in sorted(ctx.catalog_names()):
            catalog = ctx.catalog(catalog_name)
            for schema_name in sorted(catalog.names()):
                schema = catalog.schema(schema_name)
                for name in sorted(identifiers & set(schema.names())):
                    found.append((catalog_name, schema_name, name, schema.table(name).schema))
        return tuple(found)
    except Exception:  # catalogs that cannot list: never reuse a cached rewrite
        return (object(),)


def dispatch_sql(ctx: datafusion.SessionContext, sql: str) -> str:
    """Rewrite every murmur3/murmur3_multi call in ``sql`` to its typed UDF on ``ctx``.

    Raises :class:`~.functions.UnsupportedFunctionArgumentError` or
    :class:`~.functions.FunctionArityError`; other errors are left to DataFusion.
    """
    if "murmur3" not in sql.lower():
        return sql
    state = _state(ctx)
    hit = state.cache.get(sql)
    if hit is not None:
        identifiers, fingerprint, rewritten = hit
        if _fingerprint(ctx, identifiers) == fingerprint:
            return rewritten
    try:
        calls, identifiers = find_calls(sql, HASH_KERNELS)
    except Exception:  # untokenizable text: DataFusion will report the syntax error
        return sql
    if not calls:
        return sql
    fingerprint = _fingerprint(ctx, identifiers)
    rewritten, complete = _resolve(ctx, state, sql, calls)
    if not complete:  # left for DataFusion to report; do not remember
        return rewritten
    rewritten = with_readable_names(ctx, rewritten)
    state.cache.discard(sql)  # a stale entry (its tables changed) is replaced
    state.cache.put(sql, (identifiers, fingerprint, rewritten))
    return rewritten
