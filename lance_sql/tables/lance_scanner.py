"""The pylance scanner with a filter pushed into Lance, serialized once per filter.

The filter is serialized to Substrait as pylance's ``scanner(filter=...)`` does, with
more column types stubbed (:func:`~.scan.stubbed_schema`) and float comparisons made
DataFusion's (:mod:`.float_filters`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.substrait import serialize_expressions

from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.float_filters import FloatRewriteError, with_sql_float_semantics
from lance_sql.tables.scan import stubbed_schema

if TYPE_CHECKING:
    import lance

#: Errors pylance raises when it cannot translate a pyarrow filter expression.
FILTER_REFUSED = (ValueError, TypeError, NotImplementedError, pa.ArrowException)


class _PreparedFilters:
    """Serialized filters by (filter object, dataset schema), so a scan of N tables
    serializes once; and by (filter shape, schema), so a new filter of a known shape
    skips the float rewrite check. Keys hold the filter object, so an ``id`` is never
    reused while its entry lives."""

    def __init__(self, capacity: int = 256) -> None:
        #: (id(filter), schema) -> (filter, payload): the filter held, so its id is not reused
        self._payloads: OpenCache[tuple[pc.Expression, bytes]] = OpenCache(capacity)
        #: (shape, schema) -> whether the filter needs no float rewrite; schema -> stubbed
        self._plain: OpenCache[bool] = OpenCache(capacity)
        self._stubbed: OpenCache[pa.Schema] = OpenCache(capacity)  # by _schema_key

    def payload(self, filter: pc.Expression, schema: pa.Schema) -> bytes:
        at = _schema_key(schema)
        key = (id(filter), at)
        hit = self._payloads.get(key)
        if hit is not None and hit[0] is filter:
            return hit[1]
        shape = _shape(filter)
        plain = None if shape is None else self._plain.get((shape, at))
        pushed = filter if plain else _float_semantics(filter, schema)
        if shape is not None and plain is None:
            self._plain.put((shape, at), pushed is filter)
        stubbed = self._stubbed.get_or_open(at, lambda: stubbed_schema(schema))
        payload = bytes(serialize_expressions([pushed], ["my_filter"], stubbed))
        return self._payloads.put(key, (filter, payload))[1]


def _schema_key(schema: pa.Schema) -> pa.Schema | bytes:
    """``schema`` as a dict key: itself, or its IPC bytes when a field's type cannot be
    hashed (pylance's blob extension type)."""
    try:
        hash(schema)
        return schema
    except TypeError:
        return schema.serialize().to_pybytes()


def _shape(filter: pc.Expression) -> bytes | None:
    """``filter`` without its literal values (its serialized form's schema: calls, columns
    and literal types), or None when that form cannot be read."""
    try:
        return pa.ipc.open_file(filter.__reduce__()[1][0]).schema.serialize().to_pybytes()
    except Exception:  # private serialization changed: no shape, the full path
        return None


def _float_semantics(filter: pc.Expression, schema: pa.Schema) -> pc.Expression:
    """Lance compares two float columns in total order (-0.0 < 0.0): DataFusion's semantics.
    A filter with positional field references (already rewritten) is pushed as it is."""
    try:
        return with_sql_float_semantics(filter, schema, columns_only=True)
    except FloatRewriteError:
        return filter


_PREPARED = _PreparedFilters()


def lance_scanner(
    dataset: lance.LanceDataset,
    *,
    columns: list[str] | None,
    filter: pc.Expression | None,
    fragments: list[Any] | None = None,
    batch_size: int | None = None,
    with_row_id: bool = False,
    late_materialization: bool | None = None,
) -> Any:
    """A pylance scanner with ``filter`` pushed into Lance (one of :data:`FILTER_REFUSED`
    when Lance cannot take it); ``late_materialization``: None is Lance's default."""
    # ``dataset.schema`` is converted from Lance's on every access: only when needed
    payload = None if filter is None else _PREPARED.payload(filter, dataset.schema)
    from lance.dataset import ScannerBuilder

    builder = dataset._apply_default_scan_options(ScannerBuilder(dataset))
    if columns is not None:
        builder.columns(columns)
    if fragments is not None:
        builder.with_fragments(fragments)
    if batch_size is not None:
        builder.batch_size(batch_size)
    builder.with_row_id(with_row_id)
    builder.scan_in_order(False)
    if late_materialization is not None:
        builder.late_materialization(late_materialization)
    builder._substrait_filter = payload
    return to_scanner(builder)


#: ``ScannerBuilder.to_scanner``'s arguments, read from its code once (None: not readable)
_BUILDER_ARGS: list[tuple[str, ...] | None] = []


def to_scanner(builder: Any) -> Any:
    """``builder.to_scanner()`` without pylance's deep copy of every option (kept only for
    ``to_pandas`` blobs); another pylance whose arguments differ takes pylance's path."""
    from lance.dataset import LanceScanner

    if not _BUILDER_ARGS:
        names = type(builder).to_scanner.__code__.co_names
        args = names[names.index("scanner") + 1 :] if "scanner" in names else ()
        args = args[: args.index("LanceScanner")] if "LanceScanner" in args else ()
        _BUILDER_ARGS.append(args if set(args) == set(vars(builder)) - {"ds"} else None)
    args = _BUILDER_ARGS[0]
    if args is None:
        return builder.to_scanner()
    options = vars(builder)
    native = builder.ds._ds.scanner(*(options[a] for a in args))
    return LanceScanner(native, builder.ds, None)
