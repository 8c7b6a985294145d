"""``CREATE TABLE name (...) PARTITIONED BY (...) [LOCATION ...] [TBLPROPERTIES ...] [AS ...]``.

DataFusion 55's parser refuses partition transforms, so sqlglot reads the
statement; the column list and a CTAS query are cut from the text as written and
planned by DataFusion. Partition terms: docs/namespaces.md "Partition specs".
Runs at ``ctx.sql()``, as DataFusion's DDL does.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from lance_sql.engines.datafusion.ddl_maps import column_schema
from lance_sql.engines.datafusion.dml_target import resolved_name, schema_column
from lance_sql.engines.datafusion.sql_tokens import closing_of, depths_of, sqlglot_tokens
from lance_sql.errors import PlanningError, SpecError, UnsupportedFeatureError, first_line
from lance_sql.spec.transforms.spec_text import spec_fields
from lance_sql.tables.namespace.field_map import canonical_schema
from lance_sql.tables.namespace.properties import DATA_STORAGE_VERSION_KEY

_SET_WAREHOUSE = re.compile(
    r"^\s*set\s+lance\.warehouse\s*(?:=|\bto\b)\s*'((?:[^']|'')*)'\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
LEADING_COMMENTS = r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*"
#: a statement starting with CREATE (comments skipped): the only ones tokenized here
_CREATE = re.compile(LEADING_COMMENTS + r"create\b", re.IGNORECASE | re.DOTALL)


def create_statement(ctx: Any, query: str) -> Any | None:
    """Run ``query`` if it is ``SET lance.warehouse`` or a namespace ``CREATE TABLE``
    (an empty DataFrame), else None."""
    m = _SET_WAREHOUSE.match(query)
    if m:
        ctx.lance_warehouse = m.group(1).replace("''", "'")
        return ctx._frame(pa.table({}))
    if not _CREATE.match(query):
        return None
    tokens = sqlglot_tokens(query)
    if not _is_namespace_create(tokens):
        return None
    try:
        tree = sqlglot.parse_one(query)
    except sqlglot.errors.ParseError as exc:
        raise PlanningError(f"CREATE TABLE cannot be parsed: {exc}") from exc
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "TABLE":
        return None
    _create(ctx, tree, query, tokens)
    return ctx._frame(pa.table({}))


def _is_namespace_create(tokens: list[Any]) -> bool:
    if not tokens or tokens[0].token_type != TokenType.CREATE:
        return False
    words = {
        t.text.upper().split()[0]
        for t in tokens
        if t.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) and t.text.strip()
    }  # sqlglot reads "PARTITIONED BY" as one token
    return "EXTERNAL" not in words and bool(words & {"PARTITIONED", "LOCATION"})


def _create(ctx: Any, tree: exp.Create, query: str, tokens: list[Any]) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if not isinstance(target, exp.Table) or target.args.get("db"):
        raise PlanningError(f"CREATE TABLE: expected a plain table name, got {target.sql()}")
    name = resolved_name(target.this)
    if tree.args.get("replace"):
        raise UnsupportedFeatureError(f"CREATE OR REPLACE TABLE {name!r} is not supported")
    if ctx.table_exist(name):
        if tree.args.get("exists"):
            return
        raise PlanningError(f"CREATE TABLE {name!r}: a table of that name is registered")
    location = _location(ctx, tree, name)
    query_df = None
    if tree.expression is not None:
        if isinstance(tree.this, exp.Schema):
            raise UnsupportedFeatureError(
                f"CREATE TABLE {name!r}: give either a column list or AS SELECT, not both"
            )
        query_df = ctx.sql(_query_text(query, tokens, name))
        schema = canonical_schema(query_df.schema())
    else:
        schema = _column_schema(query, tokens, tree, name)
    fields = _partition_fields(tree, query, tokens, schema, name)
    if tree.args.get("exists"):  # IF NOT EXISTS: a namespace at LOCATION is kept as it is
        from lance_sql.tables.path_kind import path_kind

        if path_kind(location) == "namespace":
            ctx.register_namespace(name, location)
            return
    ns = PartitionedNamespace.create(location, schema, fields, **_table_properties(tree, name))
    if query_df is not None:
        rows = query_df.to_arrow_table()
        rows = pa.Table.from_arrays(
            [c.cast(f.type) for c, f in zip(rows.columns, schema, strict=True)],
            names=schema.names,
        )
        if rows.num_rows:
            ns.append(rows)
    ctx.register_namespace(name, location)


#: ``TBLPROPERTIES`` keys -> ``PartitionedNamespace.create`` arguments
_TABLE_PROPERTIES = {DATA_STORAGE_VERSION_KEY: "data_storage_version"}


def _table_properties(tree: exp.Create, name: str) -> dict[str, str]:
    """``TBLPROPERTIES ('key' = 'value', ...)`` as ``create`` arguments (known keys only)."""
    out = {}
    for prop in tree.find_all(exp.Property):
        if type(prop) is not exp.Property:
            continue  # LOCATION, PARTITIONED BY, ...: their own classes
        this, value = prop.this, prop.args.get("value")
        # a quoted key is a Literal; an unquoted dotted one (Spark allows it) a Dot
        key = this.sql() if isinstance(this, exp.Dot) else prop.name
        if key in _TABLE_PROPERTIES and _TABLE_PROPERTIES[key] in out:
            raise UnsupportedFeatureError(
                f"CREATE TABLE {name!r}: table property {key!r} is given twice"
            )
        if key not in _TABLE_PROPERTIES:
            known = ", ".join(sorted(_TABLE_PROPERTIES))
            raise UnsupportedFeatureError(
                f"CREATE TABLE {name!r}: table property {key!r} is not supported (known: {known})"
            )
        out[_TABLE_PROPERTIES[key]] = value.name if isinstance(value, exp.Literal) else str(value)
    return out


def _location(ctx: Any, tree: exp.Create, name: str) -> str:
    prop = tree.find(exp.LocationProperty)
    if prop is not None:
        return str(prop.this.this if isinstance(prop.this, exp.Literal) else prop.this.sql())
    folder = getattr(ctx, "lance_warehouse", None)  # SET lance.warehouse
    if folder is None:
        raise PlanningError(
            f"CREATE TABLE {name!r}: give LOCATION '<path>' or SET lance.warehouse = '<folder>'"
        )
    return os.path.join(folder, name)


def _query_text(query: str, tokens: list[Any], name: str) -> str:
    """The text after the top-level ``AS`` that starts the query of a CTAS."""
    for i, depth in enumerate(_depths(tokens)):
        if depth == 0 and tokens[i].token_type == TokenType.ALIAS and i + 1 < len(tokens):
            return query[tokens[i + 1].start :].rstrip().rstrip(";")
    raise PlanningError(f"CREATE TABLE {name!r} AS: the query was not found")


def _column_schema(query: str, tokens: list[Any], tree: exp.Create, name: str) -> pa.Schema:
    """The column list's schema, cut as written and read by DataFusion's ``CREATE TABLE``."""
    import datafusion

    if not isinstance(tree.this, exp.Schema) or not tree.this.expressions:
        raise PlanningError(f"CREATE TABLE {name!r}: no columns (give a column list or AS SELECT)")
    opening = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN), None)
    closing = closing_of(_depths(tokens), opening) if opening is not None else None
    if opening is None or closing is None:
        raise PlanningError(f"CREATE TABLE {name!r}: the column list was not found")
    columns = query[tokens[opening].start : tokens[closing].end + 1]

    def plan(text: str) -> pa.Schema:  # MAP(K, V) types: see ddl_maps
        scratch = datafusion.SessionContext()
        scratch.sql(f"CREATE TABLE __lance_columns {text}").collect()
        return scratch.table("__lance_columns").schema()

    try:
        planned = column_schema(columns, plan)
    except Exception as exc:
        first = first_line(exc)
        raise SpecError(f"CREATE TABLE {name!r}: column list {columns}: {first}") from exc
    return canonical_schema(planned)


def _depths(tokens: list[Any]) -> list[int]:
    return depths_of((t.token_type.name for t in tokens), ("L_PAREN",), ("R_PAREN",))


def _partition_fields(
    tree: exp.Create, query: str, tokens: list[Any], schema: pa.Schema, name: str
) -> list[dict[str, Any]]:
    """The fields of ``PARTITIONED BY (...)``, names resolved as DataFusion does."""
    if tree.find(exp.PartitionedByProperty) is None:
        return []
    at = next((i for i, t in enumerate(tokens) if t.text.upper().startswith("PARTITIONED")), None)
    opening = at + 1 if at is not None and at + 1 < len(tokens) else None
    if opening is None or tokens[opening].token_type != TokenType.L_PAREN:
        raise SpecError(f"CREATE TABLE {name!r}: write PARTITIONED BY (term, ...)")
    closing = closing_of(_depths(tokens), opening)
    if closing is None:
        raise SpecError(f"CREATE TABLE {name!r}: PARTITIONED BY ( is never closed")
    text = query[tokens[opening].end + 1 : tokens[closing].start]
    try:
        fields = spec_fields(text)
    except SpecError as exc:
        raise SpecError(f"CREATE TABLE {name!r}: PARTITIONED BY ({text}): {exc}") from exc

    def column(col: str) -> str:
        missing = f"CREATE TABLE {name!r}: PARTITIONED BY names no column {col!r}"
        return schema_column(col, schema, lambda: SpecError(missing))

    for f in fields:
        if "sources" in f:
            f["sources"] = [column(c) for c in f["sources"]]
        else:
            f["source"] = column(f["source"])
    return fields
