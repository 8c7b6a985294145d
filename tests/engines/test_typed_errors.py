"""lance-sql errors raised inside DataFusion reach the caller typed (issue #15).

Each failure is real: a ``__manifest`` location escaping the root
(``UnsafeLocationError`` while DataFusion plans), a truncated data file of a
partition table (pylance's failure wrapped into ``FormatError`` while DataFusion
executes), a column dropped after registration (``SchemaMismatchError``), a
Lance dataset deleted after registration. Inside
:func:`~lance_sql.engines.datafusion.errors.typed_errors` every DataFrame
method raises that error: same class, same message, and (while recorded) the
very object, with DataFusion's exception as its context. The raw exceptions
come from a plain ``datafusion.SessionContext`` holding the same providers;
``lance_sql.SessionContext`` DataFrames apply the mapping themselves.
"""

from __future__ import annotations

import glob
import re
import shutil
from pathlib import Path
from typing import Any

import datafusion
import lance
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.engines.datafusion import errors as df_errors
from lance_sql.engines.datafusion.errors import (
    TypedStream,
    record,
    reraise_typed,
    typed_error,
    typed_errors,
)
from lance_sql.engines.datafusion.lance_provider import LanceDatasetTable
from lance_sql.engines.datafusion.namespace_register import register_namespace
from lance_sql.errors import (
    FormatError,
    LanceSqlError,
    NotFoundError,
    SchemaMismatchError,
    SpecError,
    UnsafeLocationError,
)
from lance_sql.tables.lance_table import LanceTable
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
ROWS = pa.table({"k": list(range(100)), "v": list(range(100))})


def _namespace(root: Path) -> str:
    ns = PartitionedNamespace.create(
        str(root), SCHEMA, [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    )
    ns.append(ROWS)
    return str(root)


def _run(df: datafusion.DataFrame, method: str) -> Any:
    if method == "execute_stream":
        return list(TypedStream(df.execute_stream()))
    if method == "show":
        return df.show()
    return getattr(df, method)()


METHODS = ["collect", "to_arrow_table", "to_pandas", "show", "execute_stream", "to_pylist"]


def _raw(root: str) -> datafusion.SessionContext:
    """A plain DataFusion context with lance-sql's provider for the namespace at ``root``."""
    ctx = datafusion.SessionContext()
    register_namespace(ctx, "n", root)
    return ctx


@pytest.fixture
def escaping(tmp_path: Path) -> datafusion.SessionContext:
    """A namespace whose ``__manifest`` says every table lives at ``../../escape``."""
    root = _namespace(tmp_path / "ns")
    lance.dataset(f"{root}/__manifest").update(
        {"location": "'../../escape'"}, where="object_type = 'table'"
    )
    return _raw(root)


UNSAFE = r"location '\.\./\.\./escape' of table"


@pytest.mark.parametrize("method", METHODS)
def test_unsafe_location_while_planning(escaping: datafusion.SessionContext, method: str) -> None:
    sql = "SELECT k, v FROM n WHERE v > 3"
    with pytest.raises(Exception) as plain:
        _run(escaping.sql(sql), method)
    assert type(plain.value) is Exception  # what DataFusion raises by itself
    assert "UnsafeLocationError" in str(plain.value)
    with pytest.raises(UnsafeLocationError, match=UNSAFE) as info, typed_errors():
        _run(escaping.sql(sql), method)
    assert "PyErr" not in str(info.value)
    assert type(info.value.__context__) is Exception  # DataFusion's own exception
    assert info.value.__traceback__ is not None


def test_lance_sql_context_raises_typed(tmp_path: Path) -> None:
    root = _namespace(tmp_path / "ns")
    lance.dataset(f"{root}/__manifest").update(
        {"location": "'../../escape'"}, where="object_type = 'table'"
    )
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    for method in METHODS:
        with pytest.raises(UnsafeLocationError, match=UNSAFE):
            _run(ctx.sql("SELECT * FROM n"), method)


def test_the_recorded_error_is_the_original_object(escaping: datafusion.SessionContext) -> None:
    df_errors._recorded.clear()
    with pytest.raises(Exception) as plain:
        escaping.sql("SELECT * FROM n").collect()
    originals = list(df_errors._recorded.values())
    assert originals and all(isinstance(e, UnsafeLocationError) for e in originals)
    found = typed_error(plain.value)
    assert found is originals[-1] or found in originals
    assert found.__cause__ is None  # its own cause (none here), not DataFusion's
    assert id(found) not in df_errors._recorded  # recovered once, then forgotten


def test_rebuilt_when_not_recorded(escaping: datafusion.SessionContext) -> None:
    """Pushed out of the registry: same class and message, rebuilt from DataFusion's text."""
    with pytest.raises(Exception) as plain:
        escaping.sql("SELECT * FROM n").collect()
    original = typed_error(plain.value)
    df_errors._recorded.clear()
    rebuilt = typed_error(plain.value)
    assert type(rebuilt) is UnsafeLocationError and rebuilt is not original
    assert str(rebuilt) == str(original)
    assert rebuilt.__cause__ is plain.value


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[str, str]:
    """A namespace one of whose partition tables has a truncated data file."""
    root = _namespace(tmp_path / "ns")
    entry = PartitionedNamespace.open(root).tables()[0]
    with open(glob.glob(f"{entry.uri}/data/*.lance")[0], "r+b") as f:
        f.truncate(100)
    return root, entry.object_id


@pytest.mark.parametrize("method", METHODS)
def test_damaged_data_while_executing(damaged: tuple[str, str], method: str) -> None:
    root, object_id = damaged
    ctx = _raw(root)
    with (
        pytest.raises(FormatError, match=re.escape(f"partition table '{object_id}'")) as info,
        typed_errors(),
    ):
        _run(ctx.sql("SELECT sum(v) AS s FROM n"), method)
    assert info.value.path is not None  # the original object: attributes kept
    assert info.value.__cause__ is not None  # pylance's own failure


def test_damaged_data_rebuilt_from_display_text(damaged: tuple[str, str]) -> None:
    root, _ = damaged
    ctx = _raw(root)
    with pytest.raises(Exception) as plain:
        ctx.sql("SELECT * FROM n").collect()
    original = typed_error(plain.value)
    assert isinstance(original, FormatError)
    df_errors._recorded.clear()
    rebuilt = typed_error(plain.value)
    assert type(rebuilt) is FormatError
    assert str(rebuilt) == str(original)


def test_damaged_data_under_a_storage_partitioned_join(damaged: tuple[str, str]) -> None:
    root, object_id = damaged
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("l", root)
    ctx.register_namespace("r", root)
    with (
        pytest.raises(FormatError, match=re.escape(f"partition table '{object_id}'")),
        typed_errors(),
    ):
        ctx.sql("SELECT a.k, b.v FROM l a JOIN r b ON a.k = b.k").collect()


def test_dropped_column_is_a_schema_mismatch(tmp_path: Path) -> None:
    """Planning re-checks the registered schema; the ``schema`` property itself never raises."""
    root = _namespace(tmp_path / "ns")
    ctx = _raw(root)
    assert ctx.sql("SELECT count(*) AS c FROM n").to_pylist() == [{"c": 100}]
    PartitionedNamespace.open(root).drop_columns(["v"])
    with pytest.raises(SchemaMismatchError, match="register the namespace again"), typed_errors():
        ctx.sql("SELECT k, v FROM n").collect()


def test_deleted_lance_dataset(tmp_path: Path) -> None:
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(ROWS, uri)
    ctx = datafusion.SessionContext()
    ctx.register_table("t", LanceDatasetTable(LanceTable.open(uri), name="t", partitions=2))
    shutil.rmtree(uri)
    with pytest.raises(LanceSqlError) as info, typed_errors():
        ctx.sql("SELECT * FROM t").collect()
    assert isinstance(info.value, NotFoundError | FormatError)


def test_other_errors_pass_through_unchanged(escaping: datafusion.SessionContext) -> None:
    with pytest.raises(Exception, match="no_such_table") as info, typed_errors():
        escaping.sql("SELECT * FROM no_such_table").collect()
    assert not isinstance(info.value, LanceSqlError)
    with pytest.raises(ZeroDivisionError), typed_errors():
        _ = 1 / 0
    typed_spec = SpecError("bad", key="k")
    with pytest.raises(SpecError) as again, typed_errors():
        raise typed_spec
    assert again.value is typed_spec


def test_typed_decorator(escaping: datafusion.SessionContext) -> None:
    collect = typed_errors()(lambda df: df.collect())
    with pytest.raises(UnsafeLocationError):
        collect(escaping.sql("SELECT * FROM n"))


def _pyerr(exc: BaseException) -> str:
    """pyo3's ``Debug`` rendering of a Python exception, as DataFusion prints it."""
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    return f"PyErr {{ type: <class '{name}'>, value: {exc!r}, traceback: None }}"


def test_nested_query_text_is_unescaped() -> None:
    """A join group's failure re-raised by the outer query: the inner text is escaped."""
    inner_error = FormatError("part 'x' is \"damaged\"\nsecond line", path="/data/t")
    inner = Exception(f"DataFusion error: External error: Python error {_pyerr(inner_error)}")
    outer = Exception(f"DataFusion error: External error: Python error {_pyerr(inner)}")
    df_errors._recorded.clear()
    rebuilt = typed_error(outer)
    assert type(rebuilt) is FormatError and str(rebuilt) == str(inner_error)
    record(inner_error)
    assert typed_error(outer) is inner_error
    record(inner_error)
    with pytest.raises(FormatError) as info:
        try:
            raise outer
        except Exception as exc:
            reraise_typed(exc)
    assert info.value is inner_error


def test_only_lance_sql_classes_are_rebuilt() -> None:
    fake = ValueError("x")
    text = f"Python error {_pyerr(fake)}".replace("builtins.ValueError", "subprocess.Popen")
    assert typed_error(Exception(text)) is None
    assert typed_error(Exception("External error: KeyError: 'x'")) is None
    assert typed_error(Exception("")) is None


def test_registry_is_bounded() -> None:
    for i in range(df_errors.MAX_RECORDED * 3):
        record(FormatError(f"e{i}"))
    assert len(df_errors._recorded) == df_errors.MAX_RECORDED
    record(ValueError("not ours"))  # ignored
    assert len(df_errors._recorded) == df_errors.MAX_RECORDED
    df_errors._recorded.clear()


def test_damaged_lance_table_data(tmp_path: Path) -> None:
    """pylance's failure on a registered Lance table's data file is a FormatError naming it."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(ROWS, uri)
    with open(glob.glob(f"{uri}/data/*.lance")[0], "r+b") as f:
        f.truncate(100)
    ctx = datafusion.SessionContext()
    ctx.register_table("t", LanceDatasetTable(LanceTable.open(uri), name="t", partitions=2))
    message = "Lance table 't' at version 1 cannot be read"
    with pytest.raises(FormatError, match=message) as info, typed_errors():
        ctx.sql("SELECT sum(v) AS s FROM t").collect()
    assert info.value.path == uri
    assert info.value.__cause__ is not None  # pylance's own exception
    ours = lance_sql.SessionContext()
    ours.register_lance("t", uri)
    with pytest.raises(FormatError, match="Lance table 't'"):
        ours.sql("SELECT v FROM t").collect()


def test_schema_property_never_raises(escaping: datafusion.SessionContext, tmp_path: Path) -> None:
    """DataFusion panics on an exception in ``schema``: it is fixed at registration."""
    root = _namespace(tmp_path / "other")
    ctx = datafusion.SessionContext()
    provider = register_namespace(ctx, "n", root)
    PartitionedNamespace.open(root).drop_columns(["v"])
    assert provider.schema.names == ["k", "v"]  # the registered schema, no I/O, no error
    lance.dataset(f"{root}/__manifest").update(
        {"location": "'../../escape'"}, where="object_type = 'table'"
    )
    assert provider.schema.names == ["k", "v"]
    with pytest.raises(LanceSqlError), typed_errors():
        ctx.sql("SELECT k FROM n").collect()


_MESSAGE = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40
)
_CLASSES = st.sampled_from(
    [FormatError, NotFoundError, UnsafeLocationError, SchemaMismatchError, SpecError]
)


@settings(max_examples=200, deadline=None)
@given(cls=_CLASSES, message=_MESSAGE, depth=st.integers(0, 2), keep=st.booleans())
def test_any_message_survives_nesting(
    cls: type[LanceSqlError], message: str, depth: int, keep: bool
) -> None:
    original = cls.__new__(cls)
    Exception.__init__(original, message)
    exc: BaseException = original
    for _ in range(depth + 1):
        exc = Exception(f"DataFusion error: External error: Python error {_pyerr(exc)}")
    df_errors._recorded.clear()
    if keep:
        record(original)
    found = typed_error(exc)
    assert type(found) is cls and str(found) == str(original)
    assert (found is original) == keep
