"""Any-type, any-arity ``murmur3`` / ``murmur3_multi`` for a DataFusion SessionContext.

datafusion-python 55 scalar UDFs have one exact signature each, and DataFusion
coerces an argument to it only by lossless widening. So SQL calls are
*dispatched*: each ``murmur3(...)`` / ``murmur3_multi(...)`` call in the query
text is renamed to a typed UDF registered on demand for its exact argument
types (``__lance_murmur3__int64``, ``__lance_murmur3_multi__string__int32``...).

How the argument types are found: DataFusion itself is asked, in the call's
real scope (CTEs, subqueries, correlated references, GROUP BY/HAVING, ORDER BY
aliases, JOIN ON...). Each unresolved call is renamed to a *probe* UDF whose
signature no real type coerces to (a struct with a null field); planning the
query under ``EXPLAIN`` (never executed, so DDL/DML are not run) then fails
with DataFusion's coercion error, which names the probe and the exact argument
types (``coercion from Utf8, Int64 to the signature ...``). DataFusion parses its
own type names back (``arrow_cast(NULL, '<type>')``), the typed UDF is
registered and the call renamed; the next round finds the next call. A probe
that plans without error had only NULL arguments.

Only the function-name token of each call is replaced (positions from a SQL
tokenizer that knows strings, quoted identifiers and comments); every other
byte of the query is kept, and queries not mentioning ``murmur3`` are returned
unchanged without tokenizing. Results are cached per context by query text and
the schemas of the tables the query names, so an identical query is not probed
again unless one of its tables changed. Everything is thread-safe: registered
names are deterministic (one name, one definition) and shared state is locked.

DataFusion is imported lazily: ``import udfs`` does not need it.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from udfs.canonical import is_supported
from udfs.errors import UnsupportedTypeError
from udfs.hashing import murmur3, murmur3_multi

if TYPE_CHECKING:
    import datafusion

FUNCTIONS = ("murmur3", "murmur3_multi")
_PROBE_TYPE = pa.struct([pa.field("__lance_probe__", pa.null())])
_PROBE_PREFIX = "__lance_probe_"
_PROBE_ERROR = re.compile(r"call to '__lance_probe_(\d+)_(\d+)' function: coercion from ")
_PROBE_ERROR_END = " to the signature "
_CACHE_SIZE = 512
_MAX_ROUNDS = 1000


class DispatchArityError(TypeError):
    """A murmur3 call with the wrong number of arguments."""

    def __init__(self, function: str, count: int) -> None:
        need = "exactly 1 argument" if function == "murmur3" else "at least 1 argument"
        super().__init__(f"{function} takes {need}, got {count}")
        self.function = function


@dataclass(frozen=True)
class Call:
    """One call of a dispatched function in the query text."""

    function: str  # "murmur3" or "murmur3_multi"
    start: int  # the name token's span in the text, end exclusive
    end: int
    arity: int
    key: str  # SELECT scope, function and argument tokens: equal keys, same expression


@dataclass
class _ContextState:
    lock: threading.Lock
    registered: set[str]
    cache: OrderedDict[str, tuple[set[str], tuple[Any, ...], str]]


_STATES: weakref.WeakKeyDictionary[Any, _ContextState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()
_TYPE_CACHE: dict[str, pa.DataType] = {}
_TYPE_CTX: list[Any] = []


def _state(ctx: Any) -> _ContextState:
    with _STATES_LOCK:
        state = _STATES.get(ctx)
        if state is None:
            state = _ContextState(threading.Lock(), set(), OrderedDict())
            _STATES[ctx] = state
        return state


# --- finding calls ----------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # sqlglot's TokenType name
    text: str
    start: int  # span in the query text, end exclusive
    end: int


def _tokens(sql: str, offset: int = 0) -> list[_Token]:
    """Tokens with positions; statements sqlglot keeps as one opaque string
    (``EXPLAIN ...``) are tokenized again after their keyword."""
    from sqlglot.dialects.postgres import Postgres

    out: list[_Token] = []
    for tok in Postgres().tokenizer().tokenize(sql):
        kind = tok.token_type.name
        out.append(_Token(kind, tok.text, offset + tok.start, offset + tok.end + 1))
        if kind == "COMMAND":
            rest = tok.end + 1
            return out + _tokens(sql[rest:], offset + rest)
    return out


def _select_scopes(tokens: list[_Token]) -> list[int]:
    """For each token, the id of the SELECT it belongs to (subqueries and set operations
    each get their own): same-text calls are only grouped within one SELECT."""
    scopes = []
    stack: list[int] = []
    current = 0
    next_id = 1
    for tok in tokens:
        if tok.kind == "L_PAREN":
            stack.append(current)
        elif tok.kind == "R_PAREN" and stack:
            current = stack.pop()
        elif tok.kind == "SELECT":
            current = next_id
            next_id += 1
        scopes.append(current)
    return scopes


def find_calls(sql: str) -> tuple[list[Call], set[str]]:
    """Calls of murmur3/murmur3_multi in ``sql``, and the identifiers the query names.

    Postgres' tokenizer is used because DataFusion's SQL shares its lexical rules
    (``''`` escapes, ``E''`` strings, ``$$`` strings, ``"quoted"`` identifiers,
    ``--`` and ``/* */`` comments). Qualified names (``x.murmur3(...)``) are not calls
    of ours.
    """
    tokens = _tokens(sql)
    names: set[str] = set()
    calls: list[Call] = []
    opening = ("L_PAREN", "L_BRACKET", "L_BRACE")
    closing = ("R_PAREN", "R_BRACKET", "R_BRACE")
    scopes = _select_scopes(tokens)
    for i, tok in enumerate(tokens):
        if tok.kind not in ("VAR", "IDENTIFIER"):
            continue
        name = tok.text if tok.kind == "IDENTIFIER" else tok.text.lower()
        names.add(name)
        if name not in FUNCTIONS:
            continue
        if i + 1 >= len(tokens) or tokens[i + 1].kind != "L_PAREN":
            continue
        if i > 0 and tokens[i - 1].kind == "DOT":
            continue
        depth = 0
        commas = 0
        empty = True
        arg_tokens: list[str] = []
        for tok2 in tokens[i + 1 :]:
            arg_tokens.append(f"{tok2.kind}:{tok2.text}")
            if tok2.kind in opening:
                depth += 1
                if depth == 1:
                    continue
            elif tok2.kind in closing:
                depth -= 1
                if depth == 0:
                    break
            elif tok2.kind == "COMMA" and depth == 1:
                commas += 1
            empty = False
        arity = 0 if empty else commas + 1
        key = f"{scopes[i]}:{name}" + " ".join(arg_tokens)
        calls.append(Call(name, tok.start, tok.end, arity, key))
    return calls, names


def _splice(sql: str, calls: list[Call], names: list[str | None]) -> str:
    parts: list[str] = []
    pos = 0
    for call, name in zip(calls, names, strict=True):
        parts.append(sql[pos : call.start])
        parts.append(name if name is not None else sql[call.start : call.end])
        pos = call.end
    parts.append(sql[pos:])
    return "".join(parts)


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
    import datafusion

    if function == "murmur3":

        def impl(values: pa.Array) -> pa.Array:
            return murmur3(values)

    else:

        def impl(*columns: pa.Array) -> pa.Array:
            return murmur3_multi(list(columns))

    return datafusion.udf(impl, list(types), pa.int32(), "immutable", name)


def _probe_name(index: int, arity: int) -> str:
    return f"{_PROBE_PREFIX}{index}_{arity}"


def _make_probe(name: str, arity: int) -> Any:
    import datafusion

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
            raise UnsupportedTypeError(function, t)
    name = typed_name(function, types)
    _ensure(ctx, _state(ctx), name, lambda: _make_udf(function, types, name))
    return name


# --- readable output column names ---------------------------------------------------

#: A typed call in a DataFusion column name: ``__lance_murmur3__int64(`` -> ``murmur3(``.
_TYPED_CALL = re.compile(r"__lance_(murmur3(?:_multi)?)__[a-z0-9_]*\(")
#: Tokens that end a select list at its own nesting depth.
_SELECT_LIST_END = {
    "FROM", "WHERE", "GROUP_BY", "HAVING", "WINDOW", "QUALIFY", "ORDER_BY", "LIMIT", "OFFSET",
    "FETCH", "UNION", "INTERSECT", "EXCEPT", "INTO", "SEMICOLON",
}  # fmt: skip
#: Tokens after which a trailing identifier is an alias (``murmur3(x) h``).
_ENDS_EXPRESSION = {"R_PAREN", "R_BRACKET", "VAR", "IDENTIFIER", "NUMBER", "STRING"}


def readable_name(column_name: str) -> str:
    """The name DataFusion would give a column if the typed UDFs were called ``murmur3``...

    ``__lance_murmur3__int64(t.x) % Int64(16)`` -> ``murmur3(t.x) % Int64(16)``.
    """
    return _TYPED_CALL.sub(r"\1(", column_name)


_OPEN = ("L_PAREN", "L_BRACKET", "L_BRACE")
_CLOSE = ("R_PAREN", "R_BRACKET", "R_BRACE")


def _depths(tokens: list[_Token]) -> list[int]:
    """The bracket depth each token stands at."""
    out = []
    depth = 0
    for tok in tokens:
        if tok.kind in _CLOSE:
            depth -= 1
        out.append(depth)
        if tok.kind in _OPEN:
            depth += 1
    return out


def _select_items(tokens: list[_Token], select: int) -> list[list[_Token]]:
    """The items of the select list that starts after token ``select`` (a SELECT)."""
    start = select + 1
    if start < len(tokens) and tokens[start].kind in ("DISTINCT", "ALL"):
        start += 1
        if start < len(tokens) and tokens[start].kind == "ON":  # DISTINCT ON (...)
            depth = 0
            for j in range(start + 1, len(tokens)):
                depth += tokens[j].kind == "L_PAREN"
                depth -= tokens[j].kind == "R_PAREN"
                if depth == 0:
                    start = j + 1
                    break
    items: list[list[_Token]] = [[]]
    depth = 0
    for tok in tokens[start:]:
        if depth == 0 and (tok.kind in _SELECT_LIST_END or tok.kind in _CLOSE):
            break
        if tok.kind in _OPEN:
            depth += 1
        elif tok.kind in _CLOSE:
            depth -= 1
        elif tok.kind == "COMMA" and depth == 0:
            items.append([])
            continue
        items[-1].append(tok)
    return [item for item in items if item]


def _has_alias(item: list[_Token]) -> bool:
    if len(item) < 2:
        return False
    if item[-2].kind == "ALIAS":
        return True
    return item[-1].kind in ("VAR", "IDENTIFIER") and item[-2].kind in _ENDS_EXPRESSION


def _has_typed_call(item: list[_Token]) -> bool:
    return any(
        tok.kind == "VAR" and tok.text.startswith("__lance_murmur3") and nxt.kind == "L_PAREN"
        for tok, nxt in itertools.pairwise(item)
    )


def _query_text(sql: str, tokens: list[_Token], depths: list[int], select: int) -> str | None:
    """A query DataFusion can plan on its own whose output columns are ``select``'s list.

    The whole statement for its main SELECT (``CREATE VIEW/TABLE ... AS`` cut off);
    for a subquery, its text up to the closing bracket, after the statement's WITH
    clause (the CTEs it may read). None for other statements (EXPLAIN, INSERT...).
    """
    first = tokens[0].kind
    if depths[select] == 0:
        if first in ("SELECT", "WITH"):
            return sql
        if first != "CREATE":
            return None
        for i in range(1, select + 1):  # CREATE ... AS [WITH ...] SELECT
            if (
                depths[i] == 0
                and tokens[i - 1].kind == "ALIAS"
                and tokens[i].kind
                in (
                    "SELECT",
                    "WITH",
                )
            ):
                return sql[tokens[i].start :]
        return None
    level = depths[select]
    end = next(
        (j for j in range(select, len(tokens)) if depths[j] < level), len(tokens)
    )  # the closing bracket
    body = sql[tokens[select].start : tokens[end].start if end < len(tokens) else len(sql)]
    with_at = next((i for i, t in enumerate(tokens) if t.kind == "WITH" and depths[i] == 0), None)
    if with_at is None:
        return body
    main = next(
        (i for i in range(with_at, len(tokens)) if tokens[i].kind == "SELECT" and depths[i] == 0),
        None,
    )
    if main is None:
        return body
    return sql[tokens[with_at].start : tokens[main].start] + " " + body


def _alias_select_list(ctx: Any, sql: str, ordinal: int) -> str:
    """Alias the unaliased typed calls of the ``ordinal``-th SELECT's list (see below)."""
    import datafusion

    tokens = _tokens(sql)
    selects = [i for i, t in enumerate(tokens) if t.kind == "SELECT"]
    if ordinal >= len(selects):
        return sql
    select = selects[ordinal]
    candidates = [
        item
        for item in _select_items(tokens, select)
        if _has_typed_call(item) and not _has_alias(item)
    ]
    if not candidates:
        return sql
    query = _query_text(sql, tokens, _depths(tokens), select)
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

    The typed UDFs (``__lance_murmur3__int64``) would otherwise name the result
    columns. DataFusion names a column by its expression, so each select list
    holding unaliased typed calls is planned (logical plan only: nothing runs,
    no DDL is executed) for the names DataFusion gives, and each such item gets
    ``AS "<readable_name(...)>"``, e.g. ``murmur3(t.x) % Int64(16)``: exactly what
    DataFusion names a call of a UDF called ``murmur3``. Select lists are done
    innermost first, so a ``*`` over a subquery or a CTE sees readable names.
    Items map to the planned columns in order; a list whose items cannot be
    matched one to one, or that cannot be planned on its own (a correlated
    subquery), keeps the typed names, as do statements other than queries and
    ``CREATE ... AS`` queries (EXPLAIN shows the typed names).
    """
    if "__lance_murmur3" not in sql:
        return sql
    tokens = _tokens(sql)
    if not tokens or tokens[0].kind not in ("SELECT", "WITH", "CREATE"):
        return sql
    depths = _depths(tokens)
    selects = [(depths[i], i) for i, t in enumerate(tokens) if t.kind == "SELECT"]
    order = sorted(range(len(selects)), key=lambda k: (-selects[k][0], -selects[k][1]))
    for ordinal in order:  # aliases add no SELECT token: ordinals stay valid
        sql = _alias_select_list(ctx, sql, ordinal)
    return sql


# --- asking DataFusion for types ----------------------------------------------------


def _split_types(text: str) -> list[str]:
    """Split DataFusion's ``T1, T2(a, b), T3("x")`` at top-level commas."""
    parts: list[str] = []
    depth = 0
    quoted = False
    current: list[str] = []
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if current or parts:
        parts.append("".join(current).strip())
    return parts


def _arrow_type(type_text: str, function: str) -> pa.DataType:
    """DataFusion's display of a type -> pyarrow, by DataFusion parsing it (``arrow_cast``)."""
    cached = _TYPE_CACHE.get(type_text)
    if cached is not None:
        return cached
    import datafusion

    if not _TYPE_CTX:
        _TYPE_CTX.append(datafusion.SessionContext())
    literal = type_text.replace("'", "''")
    try:
        df = datafusion.SessionContext.sql(
            _TYPE_CTX[0], f"SELECT arrow_cast(NULL, '{literal}') AS v"
        )
        arrow_type = df.schema().field(0).type
    except Exception as exc:
        raise UnsupportedTypeError(function, type_text) from exc
    _TYPE_CACHE[type_text] = arrow_type
    return arrow_type


def _planning_error(ctx: Any, sql: str) -> str | None:
    """Plan ``sql`` under EXPLAIN (never executed); the error text, or None if it plans."""
    import datafusion

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
        error = _planning_error(ctx, _splice(sql, calls, attempt))
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

    First every call is probed on its own, which finds each call's exact type
    even when the same text means different columns in different scopes. If that
    cannot plan because DataFusion matches expressions by text (``SELECT
    murmur3(x) ... GROUP BY murmur3(x)`` needs both calls renamed alike), calls
    with identical text are probed as one.
    """
    for call in calls:
        if call.arity == 0 or (call.function == "murmur3" and call.arity != 1):
            raise DispatchArityError(call.function, call.arity)
    names = _resolve_groups(ctx, state, sql, calls, list(range(len(calls))))
    keys = [call.key for call in calls]
    if any(n is None for n in names) and len(set(keys)) < len(keys):
        first: dict[str, int] = {}
        group_of = [first.setdefault(k, len(first)) for k in keys]
        names = _resolve_groups(ctx, state, sql, calls, group_of)
    return _splice(sql, calls, names), all(n is not None for n in names)


def _fingerprint(ctx: Any, identifiers: set[str]) -> tuple[Any, ...]:
    """Schemas of every registered table whose name the query mentions (cache validity).

    All catalogs and schemas are searched, so a table re-registered with other
    column types makes the cached rewrite stale.
    """
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

    Returns ``sql`` itself when it has no such call. Raises
    :class:`~udfs.UnsupportedTypeError` naming the function and the Arrow type when
    an argument's type has no canonical bytes, :class:`DispatchArityError` for a
    wrong number of arguments. Other errors are left for DataFusion to report
    when it plans the returned text.
    """
    if "murmur3" not in sql.lower():
        return sql
    state = _state(ctx)
    with state.lock:
        hit = state.cache.get(sql)
    if hit is not None:
        identifiers, fingerprint, rewritten = hit
        if _fingerprint(ctx, identifiers) == fingerprint:
            with state.lock:
                if sql in state.cache:
                    state.cache.move_to_end(sql)
            return rewritten
    try:
        calls, identifiers = find_calls(sql)
    except Exception:  # untokenizable text: DataFusion will report the syntax error
        return sql
    if not calls:
        return sql
    fingerprint = _fingerprint(ctx, identifiers)
    rewritten, complete = _resolve(ctx, state, sql, calls)
    if not complete:  # left for DataFusion to report; do not remember
        return rewritten
    rewritten = with_readable_names(ctx, rewritten)
    with state.lock:
        state.cache[sql] = (identifiers, fingerprint, rewritten)
        while len(state.cache) > _CACHE_SIZE:
            state.cache.popitem(last=False)
    return rewritten
