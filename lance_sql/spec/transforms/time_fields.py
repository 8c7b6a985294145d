"""year / month / day / hour: one field (TimeTransform); one source's time fields (TimeChain)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.spec.arrow_types import datafusion_type_name
from lance_sql.spec.partition_field import Transform
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Column,
    Compare,
    InList,
    IsNull,
    Leaf,
    Literal,
    Predicate,
    Term,
    TransformTerm,
    and_,
    or_,
)
from lance_sql.spec.time_ranges import (
    TIME_CHAIN,
    lexicographic,
    naive_tuple,
    offset_bounds,
    period_start,
    to_micros,
)
from lance_sql.spec.transforms.base import (
    RANGE_OPS,
    FieldTransform,
    NotThisTerm,
    Projects,
    TermForm,
    leaf_on_value,
    plain,
    same_column,
)


def _require_temporal(term: TransformTerm, columns: tuple[Column, ...]) -> None:
    src = columns[0].type
    if not (pa.types.is_date(src) or pa.types.is_timestamp(src)):
        raise PlanningError(
            f"{term.sql()}: column {columns[0].name!r} is {src}, not a date/timestamp"
        )


@dataclass(frozen=True)
class DatePart(TermForm):
    """``date_part('<unit>', c)`` (``year(c)``, ``EXTRACT(<unit> FROM c)``): the time transforms."""

    unit: str

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.unit

    def sql(self, term: TransformTerm) -> str:
        return f"date_part('{self.unit}', {term.column.sql()})"

    def values(self, term: TransformTerm, columns: list[pa.Array]) -> pa.Array:
        import udfs.transforms

        return plain(getattr(udfs.transforms, self.unit)(columns[0]))

    def pyarrow(self, term: TransformTerm) -> pc.Expression | None:
        src = term.column.type
        value = pc.field(term.column.name)
        if self.unit == "hour" and src is not None and pa.types.is_date(src):
            value = value.cast(pa.timestamp("us"), safe=False)  # pyarrow has no hour(date)
        return getattr(pc, self.unit)(value).cast(pa.int32())

    def bind(self, term: TransformTerm, columns: tuple[Column, ...]) -> Term:
        _require_temporal(term, columns)
        return super().bind(term, columns)


#: The ``date_part`` term of each time transform, by unit.
DATE_PARTS = {unit: DatePart(unit) for unit in TIME_CHAIN}
YEAR = DATE_PARTS["year"]


@dataclass(frozen=True)
class DateTrunc(TermForm):
    """``date_trunc(unit, c)``; ``CAST(c AS DATE)`` is unit 'day' as a date (``as_date``)."""

    name = "date_trunc"

    def value_type(self, term: TransformTerm) -> pa.DataType | None:
        if term.as_date:
            return pa.date32()
        src = term.column.type
        if src is not None and pa.types.is_date(src):
            return pa.timestamp("ns")
        return src

    def sql(self, term: TransformTerm) -> str:
        col = term.column.sql()
        if term.as_date:
            return f"CAST({col} AS DATE)"
        if term.from_date:
            return f"date_trunc('{term.unit}', CAST({col} AS TIMESTAMP))"
        return f"date_trunc('{term.unit}', {col})"

    def values(self, term: TransformTerm, columns: list[pa.Array]) -> pa.Array:
        from udfs.sql_engine import sql_engine

        expr = "CAST(v AS DATE)" if term.as_date else f"date_trunc('{term.unit}', v)"
        table = pa.table({"v": columns[0]})
        out = plain(sql_engine().query({"t": table}, f"SELECT {expr} AS r FROM t").column(0))
        target = self.value_type(term)
        return out.cast(target) if target is not None and out.type != target else out

    def pyarrow(self, term: TransformTerm) -> pc.Expression | None:
        src = term.column.type
        if (
            term.as_date
            and src is not None
            and (pa.types.is_date(src) or pa.types.is_timestamp(src))
        ):
            # CAST(ts AS DATE): the local calendar day; Substrait takes unsafe casts only
            return pc.field(term.column.name).cast(pa.date32(), safe=False)
        return None

    def bind(self, term: TransformTerm, columns: tuple[Column, ...]) -> Term:
        _require_temporal(term, columns)
        src = columns[0].type
        if term.as_date and pa.types.is_date32(src):
            return columns[0]  # CAST(date_col AS DATE) is the column itself
        if term.from_date:
            if not pa.types.is_date(src):  # a timestamp cast to TIMESTAMP(ns) may fail or shift
                raise NotThisTerm(f"{term.sql()}: column {columns[0].name!r} is {src}, not a date")
            # date_trunc(unit, CAST(date_col AS TIMESTAMP)) is date_trunc(unit, date_col)
            return TransformTerm(self, columns, term.param, term.unit)
        return super().bind(term, columns)


DATE_TRUNC = DateTrunc()


class TimeTransform(FieldTransform):
    """year / month / day / hour: ``date_part`` of a date or timestamp (local time if zoned).

    Equality and IN map through the value; ranges are :class:`TimeChain`'s (month, day and
    hour alone are not monotonic).
    """

    @classmethod
    def accepts(cls, transform: Transform, t: pa.DataType) -> bool:
        return pa.types.is_timestamp(t) or (pa.types.is_date(t) and transform.type != "hour")

    def equals_term(self, term: TransformTerm) -> bool:
        return term.transform == DATE_PARTS.get(self.kind) and same_column(term.column, self.source)

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        if self.equals_term(term):
            return leaf_on_value(leaf, self.partition_column)
        if not strict and term.transform == DATE_TRUNC and same_column(term.column, self.source):
            return self._trunc_equality(leaf, term)
        return FALSE if strict else TRUE

    def _trunc_equality(self, leaf: Leaf, term: TransformTerm) -> Predicate:
        """``date_trunc(unit, c) = T`` pins this field to T's value when it is within ``unit``
        (inclusive, field by field: time fields that are no chain still prune on equality)."""
        if term.unit not in TIME_CHAIN or self.kind not in TIME_CHAIN:
            return TRUE
        depth = TIME_CHAIN.index(self.kind)
        if depth > TIME_CHAIN.index(term.unit):
            return TRUE
        if isinstance(leaf, InList) and not leaf.negated:
            return or_(*(self._trunc_equality(Compare(term, "=", v), term) for v in leaf.values))
        if not isinstance(leaf, Compare) or leaf.op != "=" or leaf.literal.value is None:
            return TRUE
        try:
            info = trunc_literal_info(leaf.literal, term.unit)
        except (TypeError, ValueError, OverflowError):  # a literal of another kind: no pruning
            return TRUE
        if info is None:
            return TRUE
        full, aligned = info
        src = getattr(self.source, "type", None)
        naive = src is not None and not (pa.types.is_timestamp(src) and src.tz is not None)
        if not aligned and naive:  # (zoned: as TimeChain, never FALSE from local starts)
            return FALSE
        return Compare(self.partition_column, "=", self._value_literal(full[depth]))


class TimeChain(Projects):
    """The longest prefix of (year, month, day, hour) among the spec's fields on one source:
    a range on the source (or a ``date_trunc(unit, c)`` term, at the unit's depth) is
    projected as a lexicographic tuple comparison."""

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
    def _project(self, leaf: Leaf, strict: bool) -> Predicate:
        fail = FALSE if strict else TRUE
        if not self.chain or self.bounds is None:
            return fail
        term = getattr(leaf, "term", None)
        if isinstance(term, Column) and same_column(term, self.source):
            if isinstance(leaf, Compare) and leaf.op in RANGE_OPS:
                return self._range(leaf.op, int(leaf.literal.value), strict) or fail
            return fail
        if (
            isinstance(term, TransformTerm)
            and term.transform == DATE_TRUNC
            and same_column(term.column, self.source)
        ):
            return self._trunc(leaf, term, strict) or fail
        return fail

    def _range(self, op: str, value: int, strict: bool) -> Predicate | None:
        src_type = self.source.type
        omin, omax = self.bounds

        def lo(v: int) -> tuple[int, ...] | None:
            return naive_tuple(to_micros(v, src_type) + omin, len(self.chain))

        def hi(v: int) -> tuple[int, ...] | None:
            return naive_tuple(to_micros(v, src_type) + omax, len(self.chain))

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

    Zoned literals: computed by DataFusion in the column's zone; naive: calendar arithmetic.
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
    from udfs.sql_engine import sql_engine

    depth = TIME_CHAIN.index(unit) + 1
    v = f"arrow_cast({value}, '{datafusion_type_name(t)}')"
    parts = ", ".join(f"date_part('{u}', v) AS {u}" for u in TIME_CHAIN)
    query = f"SELECT {parts}, date_trunc('{unit}', v) = v AS aligned FROM (SELECT {v} AS v)"
    try:
        row = sql_engine().query({}, query).to_pylist()[0]
    except Exception:
        return None
    return tuple(int(row[u]) for u in TIME_CHAIN[:depth]), bool(row["aligned"])
