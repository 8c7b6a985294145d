"""Property test (issue #16): schema evolution x appends x spec versions x foreign writers.

Random programs add, drop and rename namespace columns (dropping and re-adding
a name included; renaming fields inside struct and list<struct> columns), add
spec versions, append rows, and let another writer use
pylance on single partition tables (drop a column, append a row) followed by
``repair`` (which pins what that writer did). After every step every row read
back must equal a plain model of the data kept by namespace field id; at the
end, pruned reads with an equality filter must equal the model's filter.

300 examples by default (about a minute on this machine), 5,000 under ``-m slow``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.tables.namespace.field_map import columns_by_namespace_id
from lance_sql.tables.namespace.namespace import PartitionedNamespace

NAMES = ["k", "s", "x", "y", "e"]
TYPES = {
    "int64": pa.int64(),
    "utf8": pa.utf8(),
    # AI-shaped columns: carried through every step, never filtered on or partitioned by
    "vector": pa.list_(pa.float32(), 4),
    "struct": pa.struct([("a", pa.int64()), ("tags", pa.list_(pa.string()))]),
    "list_of_struct": pa.list_(pa.struct([("k", pa.string()), ("w", pa.float32())])),
    "map": pa.map_(pa.string(), pa.string()),
}
SCALAR = (pa.int64(), pa.utf8())
INT_VALUES = st.one_of(st.none(), st.integers(0, 3))
STR_VALUES = st.sampled_from(["a", "b", "c", None])
NESTED_VALUES = {
    "vector": INT_VALUES.map(lambda i: None if i is None else [float(i)] * 4),
    "struct": INT_VALUES.map(lambda i: None if i is None else {"a": i, "tags": ["t"] * i}),
    "list_of_struct": INT_VALUES.map(
        lambda i: None if i is None else [{"k": str(i), "w": float(i)}] * i
    ),
    "map": STR_VALUES.map(lambda v: None if v is None else [("c", v)]),
}


class Model:
    """The namespace as plain Python: columns (name, field id, type) and rows by field id."""

    def __init__(self, ns: PartitionedNamespace) -> None:
        self.columns: list[tuple[str, int, pa.DataType]] = [
            (f.name, _fid(f), f.type) for f in ns.schema
        ]
        self.rows: dict[int, dict[int, Any]] = {}
        self.assigned = {fid for _, fid, _ in self.columns}
        self.next_id = 0
        #: field id -> {nested field's first name: its name now} (nested renames)
        self.renamed: dict[int, dict[str, str]] = {}
        self.nested_renames = 0

    def value(self, fid: int, t: pa.DataType, value: Any) -> Any:
        """A stored value (first nested names) as the namespace shows it now."""
        names = self.renamed.get(fid)
        if value is None or not names:
            return value
        if t == TYPES["struct"]:
            return {names.get(k, k): v for k, v in value.items()}
        return [{names.get(k, k): v for k, v in e.items()} for e in value]

    def expected(self) -> list[dict[str, Any]]:
        out = []
        for values in self.rows.values():
            out.append({n: self.value(fid, t, values.get(fid)) for n, fid, t in self.columns})
        return sorted(out, key=lambda r: r["id"])


def _fid(f: pa.Field) -> int:
    fid = field_id_of(f)
    assert fid is not None
    return fid


def _read(ns: PartitionedNamespace, **kwargs: Any) -> list[dict[str, Any]]:
    return sorted(ns.to_table(**kwargs).to_pylist(), key=lambda r: r["id"])


def _value(data: st.DataObject, t: pa.DataType) -> Any:
    if t not in SCALAR:
        kind = next(k for k, v in TYPES.items() if v == t)
        return data.draw(NESTED_VALUES[kind])
    return data.draw(INT_VALUES if t == pa.int64() else STR_VALUES)


def _append(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    rows = []
    for _ in range(n):
        row = {"id": model.next_id}
        model.next_id += 1
        for name, _, t in model.columns[1:]:
            row[name] = _value(data, t)
        rows.append(row)
    schema = pa.schema([pa.field(n, ns.schema.field(n).type) for n, _, _ in model.columns])
    shown = [{n: model.value(fid, t, r[n]) for n, fid, t in model.columns} for r in rows]
    ns.append(pa.Table.from_pylist(shown, schema=schema))
    for row in rows:
        model.rows[row["id"]] = {fid: row[name] for name, fid, _ in model.columns}


def _add(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    free = [n for n in NAMES if n not in {c[0] for c in model.columns}]
    if not free:
        return
    name = data.draw(st.sampled_from(free))
    t = TYPES[data.draw(st.sampled_from(sorted(TYPES)))]
    ns.add_columns([pa.field(name, t)])
    fid = _fid(ns.schema.field(name))
    assert fid not in model.assigned and fid > max(model.assigned)  # never reused
    model.assigned.add(fid)
    model.columns.append((name, fid, t))


def _drop(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    if len(model.columns) < 2:
        return
    i = data.draw(st.integers(1, len(model.columns) - 1))
    ns.drop_columns([model.columns[i][0]])
    del model.columns[i]


def _rename(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    free = [n for n in NAMES if n not in {c[0] for c in model.columns}]
    if len(model.columns) < 2 or not free:
        return
    i = data.draw(st.integers(1, len(model.columns) - 1))
    new = data.draw(st.sampled_from(free))
    ns.rename_column(model.columns[i][0], new)
    model.columns[i] = (new, model.columns[i][1], model.columns[i][2])


def _rename_nested(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    """Rename a field inside a struct or list<struct> column (a fresh name each time)."""
    kinds = {TYPES["struct"]: ["a", "tags"], TYPES["list_of_struct"]: ["k", "w"]}
    cands = [c for c in model.columns if c[2] in kinds]
    if not cands:
        return
    name, fid, t = data.draw(st.sampled_from(cands))
    first = data.draw(st.sampled_from(kinds[t]))
    names = model.renamed.setdefault(fid, {})
    now = names.get(first, first)
    item = ".item" if t != TYPES["struct"] and data.draw(st.booleans()) else ""
    model.nested_renames += 1
    new = f"{first}_{model.nested_renames}"  # never a name this field had
    ns.rename_column(f"{name}{item}.{now}", new)
    names[first] = new
    assert _fid(ns.schema.field(name)) == fid


def _spec(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    scalar = [c for c in model.columns[1:] if c[2] in SCALAR]
    if not scalar:
        return
    name = scalar[data.draw(st.integers(0, len(scalar) - 1))][0]
    kind = data.draw(st.sampled_from(["identity", "bucket", "multi_bucket"]))
    field: dict[str, Any] = {"sources": [name], "transform": kind}
    if kind != "identity":
        field["num_buckets"] = data.draw(st.integers(2, 3))
    ns.add_spec([field])


def _pick(data: st.DataObject, items: list[Any]) -> Any:
    """One of ``items``, drawn with constraints that do not depend on the namespace.

    Where rows land is not always a function of the draws alone (two tables can
    hold one partition value after repair recomputes a table's values; object
    ids are random names): CI at 86a8369 saw hypothesis replay one example and
    pick a table of 2 rows where the first run's had 5, so ``sampled_from(ids)``
    changed its constraints between the runs ("Inconsistent data generation").
    An index drawn from a fixed range, taken modulo the length, never does; the
    model check does not depend on which table is picked.
    """
    return items[data.draw(st.integers(0, 1 << 16)) % len(items)]


def _pick_table(ns: PartitionedNamespace, data: st.DataObject) -> Any:
    # Ordered by what the data decides (object ids are random names); the row ids
    # break ties between tables of one partition value.
    def key(e: Any) -> tuple[Any, ...]:
        return (e.spec_version, repr(sorted(e.values.items())), _ids_in(e)[2])

    tables = sorted(ns.tables(), key=key)
    return _pick(data, tables) if tables else None


def _ids_in(entry: Any) -> tuple[Any, pa.Schema, list[int]]:
    ds = lance.dataset(entry.uri, version=entry.read_version)
    schema = lance_sql.open_metadata(entry.uri, ds.version).schema
    id_col = columns_by_namespace_id(schema)[0].name
    return ds, schema, sorted(ds.to_table(columns=[id_col]).column(0).to_pylist())


def _pylance_drop(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    entry = _pick_table(ns, data)
    if entry is None:
        return
    _, schema, ids = _ids_in(entry)
    by_id = columns_by_namespace_id(schema)
    droppable = sorted(fid for fid in by_id if fid != 0)
    if not droppable:
        return
    fid = _pick(data, droppable)
    lance.dataset(entry.uri).drop_columns([by_id[fid].name])  # another writer
    ns.repair()
    for rid in ids:
        model.rows[rid][fid] = None


def _pylance_append(ns: PartitionedNamespace, model: Model, data: st.DataObject) -> None:
    entry = _pick_table(ns, data)
    if entry is None:
        return
    ds, schema, ids = _ids_in(entry)
    if not ids:
        return
    old = _pick(data, ids)
    id_col = columns_by_namespace_id(schema)[0].name
    row = ds.to_table(filter=pc.field(id_col) == old)
    new = model.next_id
    model.next_id += 1
    row = row.set_column(row.schema.get_field_index(id_col), id_col, pa.array([new], pa.int64()))
    lance.write_dataset(row, entry.uri, mode="append")  # another writer
    ns.repair()
    model.rows[new] = {**model.rows[old], 0: new}


OPS = {
    "append": _append,
    "add": _add,
    "drop": _drop,
    "rename": _rename,
    "rename_nested": _rename_nested,
    "spec": _spec,
    "pylance_drop": _pylance_drop,
    "pylance_append": _pylance_append,
}


def _literal(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def run_program(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "ns")
        schema = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("s", pa.utf8())])
        extra = data.draw(st.sampled_from([None, "vector", "struct", "list_of_struct", "map"]))
        if extra is not None:  # an AI-shaped column from the start
            schema = schema.append(pa.field("e", TYPES[extra]))
        first = data.draw(st.sampled_from(["k", "s"]))
        ns = PartitionedNamespace.create(
            root, schema, [{"source": first, "transform": "bucket", "num_buckets": 2}]
        )
        model = Model(ns)
        steps = data.draw(
            st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=7), label="program"
        )
        for step in ["append", *steps]:
            OPS[step](ns, model, data)
            assert _read(ns) == model.expected(), step
        reopened = PartitionedNamespace.open(root)
        assert _read(reopened) == model.expected()
        # Pruned, filtered reads: what the model keeps, no more, no less.
        scalar = [c for c in model.columns if c[2] in SCALAR]
        name, _, t = data.draw(st.sampled_from(scalar), label="filter column")
        value = _value(data, t)
        if value is None:
            return
        plan = lance_sql.plan_scan(reopened, f"{name} = {_literal(value)}")
        got = _read(reopened, filter=pc.field(name) == value, partitions=plan.partitions)
        want = [r for r in model.expected() if r[name] == value]
        assert got == want, (name, value, plan.partitions)
        # the same filter as a pyarrow expression (the engines' form) selects the same
        # tables, whatever other column types the namespace holds
        by_expr = lance_sql.plan_scan(reopened, pc.field(name) == value)
        assert by_expr.object_ids == plan.object_ids, (name, value)


HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]


@settings(max_examples=120, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_evolution_matches_model(data: st.DataObject) -> None:
    run_program(data)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_evolution_matches_model_long(data: st.DataObject) -> None:
    run_program(data)
