"""Partition transforms that know their own algebra (one class per transform).

Each class wraps one :class:`~lance_sql.tables.namespace.spec.PartitionField`
bound to its source column(s) and answers, for one leaf predicate over source
columns (or over a transform term):

- :meth:`FieldTransform.project` — the *inclusive* projection: a predicate on
  the partition column that is TRUE (or NULL-free TRUE) for every partition
  that may hold a row matching the leaf. ``TRUE`` when the field says nothing.
- :meth:`FieldTransform.strict_project` — the *strict* projection: TRUE only
  for partitions in which every row matches the leaf. ``FALSE`` when unknown.
- :meth:`FieldTransform.project_conjunction` — projection of a whole AND of
  leaves, used where one leaf alone says nothing (multi-column transforms and
  expression fields need every source bound by ``=`` / ``IN``).

Partition values of literals are always computed with :mod:`udfs` (the same
code that computed the stored partition values), never re-implemented here.
The planner never switches on transform names: it asks the objects built by
:func:`make_transform` (plus :class:`TimeChain` for several time fields on
one source, see :mod:`.time_ranges`).
"""

from __future__ import annotations

import decimal
import itertools
from collections.abc import Sequence

import pyarrow as pa

from lance_sql.planning.predicates import (
    FALSE,
    TRUE,
    Column,
    Compare,
    InList,
    IsNull,
    Leaf,
    Literal,
    Predicate,
    StartsWith,
    Term,
    TransformTerm,
    and_,
    or_,
)
from lance_sql.planning.time_ranges import (
    TIME_CHAIN,
    lexicographic,
    naive_tuple,
    offset_bounds,
    period_start,
    to_micros,
)
from lance_sql.tables.namespace.spec import PartitionField


def _literal_errors() -> tuple[type[BaseException], ...]:
    import udfs
    from lance_sql.errors import PlanningError

    return (
        PlanningError,
        ValueError,
        ArithmeticError,
        pa.ArrowException,
        udfs.ExpressionError,
        udfs.UnsupportedTypeError,
    )


#: What computing the partition value of a literal may raise; it then prunes nothing.
#: (Programming errors - TypeError, AttributeError, ... - are never swallowed.)
LITERAL_ERRORS = _literal_errors()

#: Largest cross product of IN lists enumerated for multi-column fields.
MAX_ENUMERATION = 1024
#: Largest bucket count whose partition values are enumerated for bucket terms.
MAX_BUCKET_ENUMERATION = 65536

_RANGE_OPS = ("<", "<=", ">", ">=")


def apply_field(field: PartitionField, columns: Sequence[pa.Array]) -> pa.Array:
    """The partition values of ``field`` for source ``columns`` (via :mod:`udfs`)."""
    import udfs

    fn = getattr(udfs, "apply_partition_field", None)
    if fn is not None:
        out = fn(
            columns=list(columns),
            transform=field.transform,
            expression=field.expression,
            result_type=field.result_type,
        )
    elif field.transform is not None:
        from udfs.transforms import apply_transform

        out = apply_transform(field.transform, list(columns))
    else:  # pragma: no cover - udfs always provides apply_partition_field
        out = udfs.evaluate_expression(field.expression, list(columns), field.result_type)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if out.type != field.result_type:
        out = out.cast(field.result_type)
    return out


def same_column(a: Column, b: Column | None) -> bool:
    """Whether two bound columns are the same source (by field id when both have one)."""
    if b is None:
        return False
    if a.field_id is not None and b.field_id is not None:
        return a.field_id == b.field_id
    return a.name == b.name


def literal_array(values: Sequence[Literal | None], arrow_type: pa.DataType) -> pa.Array:
    return pa.array([None if v is None else v.value for v in values], type=arrow_type)


def _lit(value: object, arrow_type: pa.DataType) -> Literal:
    return Literal(value, arrow_type)


class FieldTransform:
    """Base class: a partition field bound to its source columns (None = column missing)."""

    preserves_order = False

    def __init__(self, field: PartitionField, sources: tuple[Column | None, ...]) -> None:
        self.field = field
        self.sources = sources
        self.partition_column = Column(field.column_name, None, field.result_type)

    # ---- identity of the transform
    @property
    def kind(self) -> str:
        return self.field.transform.type if self.field.transform else "expression"

    @property
    def result_type(self) -> pa.DataType:
        return self.field.result_type

    @property
    def source(self) -> Column | None:
        return self.sources[0] if len(self.sources) == 1 else None

    def satisfies_order_of(self, other: FieldTransform) -> bool:
        """Whether partitions of ``self`` are each inside one partition of ``other``.

        (day satisfies month and year; bucket[16] satisfies bucket[8]; identity
        satisfies every transform on the same source.)
        """
        if [s.field_id if s else None for s in self.sources] != [
            s.field_id if s else None for s in other.sources
        ]:
            return False
        return self._refines(other)

    def _refines(self, other: FieldTransform) -> bool:
        return self.field.transform == other.field.transform and self.field.expression == (
            other.field.expression
        )

    # ---- values
    def values_of(self, literals: Sequence[Literal | None]) -> list[object]:
        """Partition values of single-source literal values (None = NULL)."""
        src = self.source
        assert src is not None and src.type is not None
        out = apply_field(self.field, [literal_array(literals, src.type)])
        return out.to_pylist()

    def _value_literal(self, value: object) -> Literal:
        return _lit(value, self.result_type)

    # ---- projections
    def on_source(self, term: Term) -> bool:
        return (
            isinstance(term, Column) and self.source is not None and same_column(term, self.source)
        )

    def project(self, leaf: Leaf) -> Predicate:
        """Inclusive projection of one leaf (TRUE when this field cannot prune on it)."""
        if isinstance(leaf, IsNull) and self.on_source(leaf.term) and self._null_preserving:
            return IsNull(self.partition_column, leaf.negated)
        if self.on_source(getattr(leaf, "term", None)):
            return self._project_source(leaf)
        term = getattr(leaf, "term", None)
        if isinstance(term, TransformTerm):
            return self._project_term(leaf, term, strict=False)
        return TRUE

    def strict_project(self, leaf: Leaf) -> Predicate:
        """Strict projection of one leaf (FALSE when this field cannot prove it)."""
        if isinstance(leaf, IsNull) and self.on_source(leaf.term) and self._null_preserving:
            return IsNull(self.partition_column, leaf.negated)
        if self.on_source(getattr(leaf, "term", None)):
            return self._strict_source(leaf)
        term = getattr(leaf, "term", None)
        if isinstance(term, TransformTerm):
            return self._project_term(leaf, term, strict=True)
        return FALSE

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        """Inclusive projection of an AND of leaves beyond the per-leaf projections."""
        return TRUE

    #: f(NULL) is NULL and f(x) is not NULL for x not NULL.
    _null_preserving = True

    def _project_source(self, leaf: Leaf) -> Predicate:
        """Default for a non-order-preserving, single-source function f: = / IN only."""
        if isinstance(leaf, Compare) and leaf.op == "=":
            return self._eq_values([leaf.literal])
        if isinstance(leaf, InList) and not leaf.negated:
            return self._eq_values(list(leaf.values))
        return TRUE

    def _strict_source(self, leaf: Leaf) -> Predicate:
        """f(x) != f(v) proves x != v; so does NOT IN."""
        if isinstance(leaf, Compare) and leaf.op == "!=":
            return self._ne_values([leaf.literal])
        if isinstance(leaf, InList) and leaf.negated:
            return self._ne_values(list(leaf.values))
        return FALSE

    def _eq_values(self, literals: list[Literal]) -> Predicate:
        values = _distinct(self.values_of(literals))
        return _in_pred(
            self.partition_column, [self._value_literal(v) for v in values if v is not None]
        )

    def _ne_values(self, literals: list[Literal]) -> Predicate:
        values = _distinct(self.values_of(literals))
        lits = [self._value_literal(v) for v in values if v is not None]
        if not lits:
            return IsNull(self.partition_column, negated=True)
        if len(lits) == 1:
            return Compare(self.partition_column, "!=", lits[0])
        return InList(self.partition_column, tuple(lits), negated=True)

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        return FALSE if strict else TRUE


def _distinct(values: list[object]) -> list[object]:
    out: list[object] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _in_pred(column: Column, lits: list[Literal]) -> Predicate:
    if not lits:
        return FALSE
    if len(lits) == 1:
        return Compare(column, "=", lits[0])
    return InList(column, tuple(lits))


def _leaf_on_value(leaf: Leaf, column: Column) -> Predicate:
    """The same leaf with its term replaced by a partition column of the same value type."""
    if isinstance(leaf, Compare):
        return Compare(column, leaf.op, leaf.literal)
    if isinstance(leaf, InList):
        return InList(column, leaf.values, leaf.negated)
    if isinstance(leaf, IsNull):
        return IsNull(column, leaf.negated)
    if isinstance(leaf, StartsWith):
        return StartsWith(column, leaf.prefix, leaf.negated)
    return TRUE


def _holds(leaf: Leaf, value: object) -> bool | None:
    """Evaluate a leaf on a plain Python value (None = NULL) under SQL semantics."""
    if isinstance(leaf, IsNull):
        return (value is not None) if leaf.negated else (value is None)
    if value is None:
        return None
    if isinstance(leaf, Compare):
        v = leaf.literal.value
        return {
            "=": value == v,
            "!=": value != v,
            "<": value < v,
            "<=": value <= v,
            ">": value > v,
            ">=": value >= v,
        }[leaf.op]
    if isinstance(leaf, InList):
        found = any(value == lit.value for lit in leaf.values)
        return (not found) if leaf.negated else found
    return None


# ============================================================================ identity


class IdentityTransform(FieldTransform):
    """identity: every leaf on the source maps to the same leaf on the partition column."""

    preserves_order = True

    def _refines(self, other: FieldTransform) -> bool:
        return True  # one value per partition refines any function of that value

    def _project_source(self, leaf: Leaf) -> Predicate:
        if self._float_order_differs(leaf):
            return TRUE
        return self._same_leaf(leaf)

    def _strict_source(self, leaf: Leaf) -> Predicate:
        if self._float_order_differs(leaf):
            return FALSE
        return self._same_leaf(leaf)

    def _float_order_differs(self, leaf: Leaf) -> bool:
        """Ranges and != on floats: DataFusion orders NaN above every number, pyarrow
        (which evaluates the ``__manifest`` filter) makes every NaN comparison false."""
        t = self.source.type
        if not pa.types.is_floating(t):
            return False
        return not (
            (isinstance(leaf, Compare) and leaf.op == "=")
            or (isinstance(leaf, InList) and not leaf.negated)
            or isinstance(leaf, IsNull)
        )

    def _same_leaf(self, leaf: Leaf) -> Predicate:
        if self.result_type != self.source.type:
            from lance_sql.planning.literals import coerce_compare, coerce_in

            if isinstance(leaf, Compare):
                return coerce_compare(
                    self.partition_column, leaf.op, leaf.literal, self.result_type
                )
            if isinstance(leaf, InList):
                return coerce_in(self.partition_column, leaf.values, leaf.negated, self.result_type)
        return _leaf_on_value(leaf, self.partition_column)


# ============================================================================ truncate


def _succ(value: object, arrow_type: pa.DataType, step: int) -> object | None:
    """The next (step=1) / previous (step=-1) representable integer-like value, or None."""
    if pa.types.is_integer(arrow_type):
        lo, hi = _int_bounds(arrow_type)
        nxt = int(value) + step
        return nxt if lo <= nxt <= hi else None
    if pa.types.is_decimal(arrow_type):
        unscaled = int(decimal.Decimal(value).scaleb(arrow_type.scale)) + step
        if abs(unscaled) > 10**arrow_type.precision - 1:
            return None
        return decimal.Decimal(unscaled).scaleb(-arrow_type.scale)
    return None


def _int_bounds(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_signed_integer(t):
        return -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
    return 0, (1 << t.bit_width) - 1


def monotonic_range(leaf: Compare, strict: bool, value_of, succ) -> tuple[str, object] | Predicate:
    """Project ``x op v`` through a monotonic non-decreasing ``f`` over a discrete domain.

    Inclusive: x >= v -> p >= f(v); x > v -> p >= f(v+1); x <= v -> p <= f(v);
    x < v -> p <= f(v-1).  Strict: x >= v -> p > f(v-1); x > v -> p > f(v);
    x <= v -> p < f(v+1); x < v -> p < f(v).  Returns ``(op, f(value))`` or a
    constant predicate where the neighbour does not exist.
    """
    op, v = leaf.op, leaf.literal.value
    if not strict:
        if op == ">=":
            return (">=", value_of(v))
        if op == "<=":
            return ("<=", value_of(v))
        nb = succ(v, 1 if op == ">" else -1)
        if nb is None:
            return FALSE  # nothing above the maximum / below the minimum
        return (">=" if op == ">" else "<=", value_of(nb))
    if op == ">":
        return (">", value_of(v))
    if op == "<":
        return ("<", value_of(v))
    nb = succ(v, -1 if op == ">=" else 1)
    if nb is None:
        return TRUE  # x >= MIN / x <= MAX holds for every non-NULL x
    return (">" if op == ">=" else "<", value_of(nb))


class TruncateTransform(FieldTransform):
    """truncate[W]: monotonic (toward zero for numbers, a prefix for strings)."""

    preserves_order = True

    @property
    def width(self) -> int:
        return int(self.field.transform.width)

    @property
    def is_string(self) -> bool:
        t = self.source.type if self.source else None
        return t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t))

    @property
    def is_discrete(self) -> bool:
        t = self.source.type if self.source else None
        return t is not None and (pa.types.is_integer(t) or pa.types.is_decimal(t))

    def _refines(self, other: FieldTransform) -> bool:
        if not isinstance(other, TruncateTransform):
            return False
        if self.is_string:
            return self.width >= other.width
        return other.width % self.width == 0

    def _one(self, value: object) -> object:
        return self.values_of([_lit(value, self.source.type)])[0]

    def _project_source(self, leaf: Leaf) -> Predicate:
        if isinstance(leaf, Compare) and leaf.op in _RANGE_OPS:
            return self._range(leaf, strict=False)
        if isinstance(leaf, StartsWith) and self.is_string:
            prefix, w = leaf.prefix, self.width
            if not leaf.negated:
                if len(prefix) >= w:
                    return Compare(self.partition_column, "=", self._value_literal(prefix[:w]))
                return StartsWith(self.partition_column, prefix)
            if len(prefix) <= w:
                return StartsWith(self.partition_column, prefix, negated=True)
            return TRUE
        return super()._project_source(leaf)

    def _strict_source(self, leaf: Leaf) -> Predicate:
        if isinstance(leaf, Compare) and leaf.op in _RANGE_OPS:
            return self._range(leaf, strict=True)
        if isinstance(leaf, Compare) and leaf.op == "=" and self.is_string:
            if len(str(leaf.literal.value)) < self.width:  # the partition holds only that string
                return Compare(self.partition_column, "=", leaf.literal)
            return FALSE
        if isinstance(leaf, StartsWith) and self.is_string:
            prefix, w = leaf.prefix, self.width
            if not leaf.negated:
                return StartsWith(self.partition_column, prefix) if len(prefix) <= w else FALSE
            if len(prefix) <= w:
                return StartsWith(self.partition_column, prefix, negated=True)
            return StartsWith(self.partition_column, prefix[:w], negated=True)
        return super()._strict_source(leaf)

    def _range(self, leaf: Compare, strict: bool) -> Predicate:
        if self.is_string:
            p = self._value_literal(self._one(leaf.literal.value))
            if strict:
                return Compare(self.partition_column, ">" if leaf.op in (">", ">=") else "<", p)
            return Compare(self.partition_column, ">=" if leaf.op in (">", ">=") else "<=", p)
        if not self.is_discrete:
            return FALSE if strict else TRUE
        src_type = self.source.type
        out = monotonic_range(leaf, strict, self._one, lambda v, step: _succ(v, src_type, step))
        if not isinstance(out, tuple):
            return IsNull(self.partition_column, negated=True) if out == TRUE else out
        op, value = out
        return Compare(self.partition_column, op, self._value_literal(value))

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        # left(s, W) / c - c % W on the same column with the same width is this field
        # exactly (decimals excluded: DataFusion widens that term's type, e.g. decimal(11,2),
        # and the literal's coercion to it is not mirrored here).
        if (
            term.kind == "truncate"
            and term.param == self.width
            and len(term.columns) == 1
            and same_column(term.column, self.source)
            and (self.is_string or pa.types.is_integer(self.source.type))
        ):
            return _leaf_on_value(leaf, self.partition_column)
        return FALSE if strict else TRUE


# ============================================================================= time


class TimeTransform(FieldTransform):
    """year / month / day / hour: ``date_part`` of a date or timestamp (local time if zoned).

    Equality and IN map through the value; ranges are projected by
    :class:`TimeChain` (month/day/hour alone are not monotonic); a predicate on
    the same ``date_part`` term maps to the partition column exactly.
    """

    @property
    def preserves_order(self) -> bool:  # type: ignore[override]
        return self.kind == "year"

    def _refines(self, other: FieldTransform) -> bool:
        if not isinstance(other, TimeTransform):
            return False
        mine, theirs = TIME_CHAIN.index(self.kind), TIME_CHAIN.index(other.kind)
        # a finer field identifies a coarser one only together with its parents;
        # as a sort/grouping order, day refines month refines year.
        return mine >= theirs

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        if term.kind == self.kind and same_column(term.column, self.source):
            return _leaf_on_value(leaf, self.partition_column)
        return FALSE if strict else TRUE


# =========================================================================== bucket


class BucketTransform(FieldTransform):
    """bucket[N] / multi_bucket[N] = ``abs(murmur3[_multi](cols)) % N``."""

    def __init__(self, field: PartitionField, sources: tuple[Column | None, ...]) -> None:
        super().__init__(field, sources)
        self.num_buckets = int(field.transform.num_buckets)
        self._null_preserving = len(sources) == 1

    def _refines(self, other: FieldTransform) -> bool:
        return isinstance(other, BucketTransform) and self.num_buckets % other.num_buckets == 0

    def _project_source(self, leaf: Leaf) -> Predicate:
        if len(self.sources) != 1:
            return TRUE
        return super()._project_source(leaf)

    def _strict_source(self, leaf: Leaf) -> Predicate:
        if len(self.sources) != 1:
            return FALSE
        return super()._strict_source(leaf)

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        if len(self.sources) == 1:
            return TRUE
        return enumerate_conjunction(self, leaves)

    def _same_columns(self, term: TransformTerm) -> bool:
        return len(term.columns) == len(self.sources) and all(
            same_column(c, s) for c, s in zip(term.columns, self.sources, strict=True)
        )

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        if term.kind not in ("bucket", "hash_mod", "murmur3") or not self._same_columns(term):
            return FALSE if strict else TRUE
        if isinstance(leaf, IsNull):
            # the hash (and so the term) is NULL exactly when the bucket is NULL
            return IsNull(self.partition_column, leaf.negated)
        n = self.num_buckets
        if term.kind == "murmur3":
            if strict:
                return FALSE
            hashes = _equal_values(leaf)
            if hashes is None:
                return TRUE
            return _in_pred(
                self.partition_column, [self._value_literal(abs(int(h)) % n) for h in hashes]
            )
        m = term.param
        if n % m == 0 and n <= MAX_BUCKET_ENUMERATION:
            # the partition value p determines the term: bucket_M = p % M exactly;
            # murmur3 % M is p % M or -(p % M) (the hash's sign is unknown).
            keep = []
            for p in range(n):
                r = p % m
                candidates = {r} if term.kind == "bucket" else {r, -r}
                results = [_holds(leaf, c) for c in candidates]
                ok = all(x is True for x in results) if strict else any(x is True for x in results)
                if ok:
                    keep.append(p)
            if len(keep) == n:
                return IsNull(self.partition_column, negated=True)
            return _in_pred(self.partition_column, [self._value_literal(p) for p in keep])
        if strict:
            return FALSE
        if m % n == 0:
            values = _equal_values(leaf)
            if values is None:
                return TRUE
            lo = 0 if term.kind == "bucket" else -(m - 1)
            ps = sorted({abs(int(r)) % n for r in values if lo <= int(r) <= m - 1})
            return _in_pred(self.partition_column, [self._value_literal(p) for p in ps])
        return TRUE


def _equal_values(leaf: Leaf) -> list[object] | None:
    """The finite set of values a leaf allows (``=`` / ``IN``), else None."""
    if isinstance(leaf, Compare) and leaf.op == "=":
        return [leaf.literal.value]
    if isinstance(leaf, InList) and not leaf.negated:
        return [v.value for v in leaf.values]
    return None


# ======================================================================= expression


class ExpressionTransform(FieldTransform):
    """A DataFusion SQL expression over col0, col1, ...: = and IN by substitution (appendix D)."""

    _null_preserving = False

    def _refines(self, other: FieldTransform) -> bool:
        return self.field.expression == other.field.expression

    def _project_source(self, leaf: Leaf) -> Predicate:
        return TRUE  # handled by project_conjunction (it also covers one source)

    def _strict_source(self, leaf: Leaf) -> Predicate:
        return FALSE  # f(NULL) may equal f(v): nothing is provable per row

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        return enumerate_conjunction(self, leaves)


def enumerate_conjunction(transform: FieldTransform, leaves: Sequence[Leaf]) -> Predicate:
    """``p IN {f(v0, v1, ...)}`` when every source is bound to a finite set by the leaves.

    Sound because a row matching the AND has each source value in its set, so
    its partition value is one of the enumerated ones. ``IS NULL`` binds a
    source to {NULL}; a source missing from the schema is NULL in every row.
    """
    domains: list[list[Literal | None]] = []
    for src in transform.sources:
        if src is None:
            domains.append([None])
            continue
        allowed: list[Literal | None] | None = None
        for leaf in leaves:
            term = getattr(leaf, "term", None)
            if not (isinstance(term, Column) and same_column(term, src)):
                continue
            if isinstance(leaf, Compare) and leaf.op == "=":
                values: list[Literal | None] = [leaf.literal]
            elif isinstance(leaf, InList) and not leaf.negated:
                values = list(leaf.values)
            elif isinstance(leaf, IsNull) and not leaf.negated:
                values = [None]
            else:
                continue
            allowed = values if allowed is None else [v for v in allowed if v in values]
        if allowed is None:
            return TRUE
        domains.append(allowed)
    combos = 1
    for d in domains:
        combos *= len(d)
    if combos == 0:
        return FALSE
    if combos > MAX_ENUMERATION:
        return TRUE
    rows = list(itertools.product(*domains))
    arrays = []
    for i, src in enumerate(transform.sources):
        src_type = src.type if src is not None else pa.null()
        arrays.append(literal_array([row[i] for row in rows], src_type))
    try:
        values = apply_field(transform.field, arrays).to_pylist()
    except LITERAL_ERRORS:  # an expression failing on a literal prunes nothing
        return TRUE
    distinct = _distinct(values)
    lits = [Literal(v, transform.result_type) for v in distinct if v is not None]
    pred = _in_pred(transform.partition_column, lits)
    if None in distinct:
        pred = or_(pred, IsNull(transform.partition_column))
    return pred


# ======================================================================= time chain


class TimeChain:
    """The spec's time fields on one source, combined into a lexicographic tuple.

    Holds the longest prefix of (year, month, day, hour) present among the
    spec's fields on that source; a range on the source is projected as a
    tuple comparison (see :mod:`.time_ranges` for time zones), and a
    ``date_trunc(unit, c)`` term as a tuple comparison at the unit's depth.
    """

    def __init__(self, source: Column, fields: dict[str, TimeTransform]) -> None:
        self.source = source
        chain: list[TimeTransform] = []
        for kind in TIME_CHAIN:
            if kind not in fields:
                break
            chain.append(fields[kind])
        self.chain = chain
        self.columns = [f.partition_column for f in chain]
        src_type = source.type
        self.bounds = offset_bounds(src_type.tz) if pa.types.is_timestamp(src_type) else (0, 0)

    def __bool__(self) -> bool:
        return bool(self.chain)

    # ---- ranges on the source
    def _tuple(self, micros: int) -> tuple[int, ...] | None:
        return naive_tuple(micros, len(self.chain))

    def project(self, leaf: Leaf) -> Predicate:
        return self._project(leaf, strict=False)

    def strict_project(self, leaf: Leaf) -> Predicate:
        return self._project(leaf, strict=True)

    def _project(self, leaf: Leaf, strict: bool) -> Predicate:
        fail = FALSE if strict else TRUE
        if not self.chain or self.bounds is None:
            return fail
        term = getattr(leaf, "term", None)
        if isinstance(term, Column) and same_column(term, self.source):
            if isinstance(leaf, Compare) and leaf.op in _RANGE_OPS:
                return self._range(leaf.op, int(leaf.literal.value), strict) or fail
            return fail
        if (
            isinstance(term, TransformTerm)
            and term.kind == "date_trunc"
            and same_column(term.column, self.source)
        ):
            return self._trunc(leaf, term, strict) or fail
        return fail

    def _range(self, op: str, value: int, strict: bool) -> Predicate | None:
        src_type = self.source.type
        omin, omax = self.bounds

        def lo(v: int) -> tuple[int, ...] | None:
            return self._tuple(to_micros(v, src_type) + omin)

        def hi(v: int) -> tuple[int, ...] | None:
            return self._tuple(to_micros(v, src_type) + omax)

        if not strict:
            bound = {">=": lo(value), ">": lo(value + 1), "<=": hi(value), "<": hi(value - 1)}[op]
            cmp = ">=" if op in (">", ">=") else "<="
        else:
            bound = {">=": hi(value - 1), ">": hi(value), "<=": lo(value + 1), "<": lo(value)}[op]
            cmp = ">" if op in (">", ">=") else "<"
        if bound is None:
            return None
        return lexicographic(self.columns, bound, cmp)

    # ---- date_trunc(unit, c) op T
    def _trunc(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate | None:
        level = TIME_CHAIN.index(term.unit) + 1
        k = min(level, len(self.chain))
        cols = self.columns[:k]
        zoned = pa.types.is_timestamp(self.source.type) and self.source.type.tz is not None
        if isinstance(leaf, IsNull):
            return IsNull(cols[0], leaf.negated)
        if isinstance(leaf, InList):
            parts = [
                self._trunc(Compare(term, "!=" if leaf.negated else "=", v), term, strict)
                for v in leaf.values
            ]
            if any(p is None for p in parts):
                return None
            return and_(*parts) if leaf.negated else or_(*parts)
        if not isinstance(leaf, Compare):
            return None
        info = trunc_literal_info(leaf.literal, term.unit)
        if info is None:
            return None
        full, aligned = info
        op = leaf.op
        exact = k == level
        if zoned:
            # local period starts are compared through local tuples, which DST can
            # reorder: keep only sound, non-strict forms; ranges via the source.
            if strict:
                return None
            if op == "=":
                return lexicographic(cols, full[:k], "=")
            if op in (">", ">="):
                return self._range(">=", int(leaf.literal.value), strict=False)
            return None
        if op == "=":
            if not aligned:
                return FALSE
            if strict and not exact:
                return None
            return lexicographic(cols, full[:k], "=")
        if op == "!=":
            if not aligned:
                return IsNull(cols[0], negated=True)
            if exact or strict:
                return lexicographic(cols, full[:k], "!=")
            return None
        if op in (">=", ">"):
            inclusive_eq = op == ">=" and aligned  # trunc >= T  <=>  tuple >= tuple(T)
            if not strict:
                cmp = ">=" if (inclusive_eq or not exact) else ">"
            else:
                cmp = ">=" if (inclusive_eq and exact) else ">"
            return lexicographic(cols, full[:k], cmp)
        inclusive_lt = op == "<" and aligned  # trunc < T  <=>  tuple < tuple(T)
        if not strict:
            cmp = "<" if (inclusive_lt and exact) else "<="
        else:
            cmp = "<=" if (not inclusive_lt and exact) else "<"
        return lexicographic(cols, full[:k], cmp)


def trunc_literal_info(lit: Literal, unit: str) -> tuple[tuple[int, ...], bool] | None:
    """(local (year, month, day, hour) of T cut at ``unit``, whether T is a period start).

    Computed by DataFusion itself for zoned literals (its date_part/date_trunc
    in the column's zone); by calendar arithmetic for naive ones.
    """
    depth = TIME_CHAIN.index(unit) + 1
    t = lit.type
    micros = to_micros(int(lit.value), t)
    if pa.types.is_timestamp(t) and t.tz is not None:
        return _zoned_trunc_info(int(lit.value), t, unit)
    full = naive_tuple(micros, depth)
    if full is None:
        return None
    aligned = period_start(full) == micros
    if pa.types.is_timestamp(t) and t.unit == "ns":
        aligned = aligned and int(lit.value) % 1000 == 0
    return full, aligned


def _zoned_trunc_info(value: int, t: pa.DataType, unit: str) -> tuple[tuple[int, ...], bool] | None:
    from lance_sql.planning.literals import _LOCK, _context, datafusion_type_name

    depth = TIME_CHAIN.index(unit) + 1
    v = f"arrow_cast({value}, '{datafusion_type_name(t)}')"
    parts = ", ".join(f"date_part('{u}', v) AS {u}" for u in TIME_CHAIN)
    query = f"SELECT {parts}, date_trunc('{unit}', v) = v AS aligned FROM (SELECT {v} AS v)"
    try:
        with _LOCK:
            row = _context().sql(query).to_arrow_table().to_pylist()[0]
    except Exception:
        return None
    return tuple(int(row[u]) for u in TIME_CHAIN[:depth]), bool(row["aligned"])


# ========================================================================== factory


def make_transform(field: PartitionField, sources: tuple[Column | None, ...]) -> FieldTransform:
    """The transform object for ``field`` bound to its source columns."""
    if field.transform is None:
        return ExpressionTransform(field, sources)
    kind = field.transform.type
    if kind == "identity":
        return IdentityTransform(field, sources)
    if kind in TIME_CHAIN:
        return TimeTransform(field, sources)
    if kind in ("bucket", "multi_bucket"):
        return BucketTransform(field, sources)
    if kind == "truncate":
        return TruncateTransform(field, sources)
    raise ValueError(f"unknown transform type {kind!r} in partition field {field.field_id!r}")
