"""The exact filter of a planned scan, and how a task applies it.

The conjuncts with an exact pyarrow form Substrait carries go into the Lance scan
(:meth:`ScanFilter.pushdown`); the rest filter the scanned rows exactly
(:meth:`ScanFilter.apply`): transform terms over Arrow, and leaves the IR cannot express
by the engine the filter was written for (DataFusion over the SQL, pyarrow otherwise).
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.spec.predicates import (
    Const,
    Predicate,
    Unsupported,
    and_,
    any_leaf,
    columns_of,
    conjuncts,
)
from udfs.sql_engine import sql_engine


def has_unsupported(pred: Predicate) -> bool:
    return any_leaf(pred, lambda leaf: isinstance(leaf, Unsupported))


@dataclass(frozen=True)
class ScanFilter:
    """A bound predicate plus, when it has Unsupported leaves, the original filter: ``sql``
    text, or ``substrait`` (base64 bytes of a pyarrow expression, positions of the schema)."""

    predicate: Predicate
    sql: str | None = None
    substrait: str | None = None

    @classmethod
    def parse(cls, filter: Any, schema: pa.Schema) -> ScanFilter | None:
        """The scan filter of ``filter`` (IR, pyarrow expression or SQL) over ``schema``."""
        if filter is None:
            return None
        from lance_sql.planning.planner import to_predicate

        return cls.of(filter, to_predicate(filter, schema), schema)

    @classmethod
    def of(cls, filter: Any, predicate: Predicate, schema: pa.Schema) -> ScanFilter:
        if not has_unsupported(predicate):
            return cls(predicate)
        if isinstance(filter, str):
            return cls(predicate, sql=filter)
        if _is_predicate(filter) and not has_unsupported(filter):
            # an IR tree whose binding left a leaf unmodelled (e.g. a literal no column
            # type holds exactly): its SQL rendering is what it means (DataFusion's rules)
            from lance_sql.spec.predicates import to_sql

            return cls(predicate, sql=to_sql(filter))
        if isinstance(filter, pc.Expression):
            from lance_sql.tables.substrait_schema import serialise

            try:  # positions of ``schema``; columns the filter does not read cannot matter
                buf = serialise(filter, schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise PlanningError(f"filter {filter} cannot be serialized: {exc}") from exc
            return cls(predicate, substrait=base64.b64encode(buf).decode())
        return cls(predicate)

    @property
    def is_true(self) -> bool:
        return self.predicate == Const(True)

    def columns(self, schema: pa.Schema) -> list[str]:
        """Columns a scan must read to apply this filter (schema order)."""
        if self.substrait is not None or (self.sql is not None and has_unsupported(self.predicate)):
            return list(schema.names)  # unknown or positional column references
        used = columns_of(self.predicate)
        return [n for n in schema.names if n in used]

    def pushdown(self, schema: pa.Schema) -> tuple[pc.Expression | None, bool]:
        """(AND of the conjuncts a Lance scan can run exactly, or None; whether that is all)."""
        if self.is_true:
            return None, True
        if self.predicate == Const(False):
            return pc.scalar(False), True
        forms = [_lance_form(part, schema) for part in conjuncts(self.predicate)]
        done = [f for f in forms if f is not None]
        return (reduce(operator.and_, done) if done else None), len(done) == len(forms)

    def residual(self, schema: pa.Schema) -> Predicate:
        """The conjuncts :meth:`pushdown` leaves out (TRUE when it is exact)."""
        return and_(*(p for p in conjuncts(self.predicate) if _lance_form(p, schema) is None))

    def apply(
        self, table: pa.Table, schema: pa.Schema, residual: Predicate | None = None
    ) -> pa.Table:
        """The rows of ``table`` (read with :meth:`columns` and :meth:`pushdown`) where it is
        TRUE; ``residual``: :meth:`residual`, computed once for many batches."""
        if self.substrait is not None:  # field positions are those of ``schema``
            expr = pc.Expression.from_substrait(base64.b64decode(self.substrait))
            probe = table.select(schema.names).append_column("__pos", pa.array(range(len(table))))
            return table.take(probe.filter(expr).column("__pos"))
        if self.sql is not None and has_unsupported(self.predicate):
            return _datafusion_where(table, self.sql)
        from lance_sql.planning.arrow_expr import matching_rows

        rest = self.residual(schema) if residual is None else residual
        return matching_rows(rest, table) if rest != Const(True) else table

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        from lance_sql.planning.plan_json import to_json_value

        return {
            "predicate": to_json_value(self.predicate),
            "sql": self.sql,
            "substrait": self.substrait,
        }

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> ScanFilter:
        from lance_sql.planning.plan_json import from_json_value

        return cls(from_json_value(obj["predicate"]), obj.get("sql"), obj.get("substrait"))


def _is_predicate(obj: Any) -> bool:
    return isinstance(obj, Predicate) and not isinstance(obj, Unsupported)


def _lance_form(pred: Predicate, schema: pa.Schema) -> pc.Expression | None:
    """``pred`` as a pyarrow expression a Lance scan runs exactly, or None."""
    from lance_sql.planning.arrow_expr import to_pyarrow
    from lance_sql.tables.substrait_schema import serialise

    try:
        expr = to_pyarrow(pred)
        serialise(expr, schema)
    except (PlanningError, pa.ArrowException, ValueError, TypeError):
        return None
    return expr


def _datafusion_where(table: pa.Table, sql: str) -> pa.Table:
    """``SELECT * FROM table WHERE sql`` with DataFusion, the filter's own dialect."""
    out = sql_engine().query({"t": table}, f"SELECT * FROM t WHERE {sql}")
    return out.cast(table.schema) if out.schema != table.schema else out


def scan_batches(
    units: Sequence[Any],
    scan_filter: ScanFilter | None,
    schema: pa.Schema,
    columns: Sequence[str] | None = None,
    extra: pc.Expression | None = None,
) -> Any:
    """Batches of ``columns`` (default: all) of ``units`` where ``scan_filter`` is TRUE;
    ``extra``: a further exact pyarrow filter AND-ed into the Lance scan."""
    wanted = list(schema.names) if columns is None else list(columns)
    everything = scan_filter is None or scan_filter.is_true
    pushed, exact = (None, True) if everything else scan_filter.pushdown(schema)  # type: ignore[union-attr]
    if extra is not None:
        pushed = extra if pushed is None else pushed & extra
    if everything or (exact and scan_filter.substrait is None):  # type: ignore[union-attr]
        for unit in units:
            yield from unit.to_batches(wanted, pushed)
        return
    need = scan_filter.columns(schema)
    read = list(dict.fromkeys([*wanted, *need]))
    rest = scan_filter.residual(schema)
    for unit in units:
        for batch in unit.to_batches(read, pushed):
            if batch.num_rows == 0:
                continue
            kept = scan_filter.apply(pa.Table.from_batches([batch]), schema, rest)
            yield from kept.select(wanted).combine_chunks().to_batches()
