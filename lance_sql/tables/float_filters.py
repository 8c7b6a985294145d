"""SQL float comparison semantics for filters pushed into scans (DataFusion's, exactly).

DataFusion has ``-0.0 = 0.0`` but NaN equal to NaN and above every number; Lance
compares two float columns in total order and pyarrow compute is IEEE. Each comparison
becomes ``if_else(is_nan(x) or is_nan(y), <NaN case>, (x + 0.0) op (y + 0.0))`` (NULL
stays NULL), rebuilt from the Expression's serialized IPC form; if that form changes,
:class:`FloatRewriteError` is raised and the filter must not be pushed blindly.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


class FloatRewriteError(Exception):
    """The filter's serialized form could not be read or rebuilt."""


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def _metadata_pairs(schema: pa.Schema) -> list[tuple[bytes, bytes]]:
    """Schema metadata in order, duplicates kept (``Schema.metadata`` is a dict)."""
    c = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c))
    try:
        if not c.metadata:
            return []
        p = c.metadata
        (n,) = struct.unpack("<i", ctypes.string_at(p, 4))
        p += 4
        out = []
        for _ in range(n):
            (kl,) = struct.unpack("<i", ctypes.string_at(p, 4))
            key = ctypes.string_at(p + 4, kl)
            p += 4 + kl
            (vl,) = struct.unpack("<i", ctypes.string_at(p, 4))
            value = ctypes.string_at(p + 4, vl)
            p += 4 + vl
            out.append((key, value))
        return out
    finally:
        if c.release:
            _RELEASE(c.release)(ctypes.byref(c))


@dataclass
class _Node:
    kind: str  # "call", "field_ref" or "literal"
    value: str
    start: int
    end: int = 0
    args: list[_Node] = field(default_factory=list)
    has_options: bool = False


class _Serialized:
    """One serialized Expression: prefix tokens plus the literal/options columns."""

    def __init__(self, expr: pc.Expression) -> None:
        reduced = expr.__reduce__()
        self.rebuild = reduced[0]
        reader = pa.ipc.open_file(reduced[1][0])
        if reader.num_record_batches != 1:
            raise FloatRewriteError("unexpected serialized expression layout")
        self.schema = reader.schema
        self.batch = reader.get_batch(0)
        self.tokens = [(k.decode(), v.decode()) for k, v in _metadata_pairs(self.schema)]
        self.root, end = self._parse(0)
        if end != len(self.tokens):
            raise FloatRewriteError("trailing tokens in serialized expression")

    def _parse(self, i: int) -> tuple[_Node, int]:
        if i >= len(self.tokens):
            raise FloatRewriteError("truncated serialized expression")
        key, value = self.tokens[i]
        if key in ("field_ref", "literal"):
            return _Node(key, value, i, i + 1), i + 1
        if key != "call":
            raise FloatRewriteError(f"unexpected token {key!r}")
        node = _Node("call", value, i)
        i += 1
        while True:
            if i >= len(self.tokens):
                raise FloatRewriteError("unterminated call")
            key = self.tokens[i][0]
            if key == "end":
                node.end = i + 1
                return node, i + 1
            if key == "options":
                node.has_options = True
                i += 1
                continue
            child, i = self._parse(i)
            node.args.append(child)

    def expression(self, node: _Node) -> pc.Expression:
        """The sub-expression ``node`` exactly as serialized."""
        if node.kind == "field_ref":
            return pc.field(node.value)
        if node.kind == "literal":
            return pc.scalar(self.batch.column(int(node.value))[0])
        metadata = pa.KeyValueMetadata(
            [(k.encode(), v.encode()) for k, v in self.tokens[node.start : node.end]]
        )
        fields, columns = list(self.schema), list(self.batch.columns)
        if not columns:  # the form needs one row: an unreferenced placeholder column
            fields, columns = [pa.field("", pa.null())], [pa.nulls(1)]
        schema = pa.schema(fields, metadata=metadata)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, schema) as writer:
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))
        return self.rebuild(sink.getvalue())

    def literal_type(self, node: _Node) -> pa.DataType:
        return self.batch.column(int(node.value)).type


class _Rewriter:
    def __init__(self, ser: _Serialized, schema: pa.Schema, columns_only: bool) -> None:
        self.ser = ser
        self.schema = schema
        self.columns_only = columns_only

    def float_type(self, node: _Node) -> _Float:
        """The float type of ``node``; True for a call with a float leaf anywhere inside
        (a float of unknown width); None if ``node`` cannot evaluate to a float."""
        if node.kind == "field_ref":
            i = self.schema.get_field_index(node.value)
            t = self.schema.field(i).type if i >= 0 else None
        elif node.kind == "literal":
            t = self.ser.literal_type(node)
        else:
            return True if any(self.float_type(a) is not None for a in node.args) else None
        return t if t is not None and pa.types.is_floating(t) else None

    def rewrites(self, node: _Node) -> bool:
        """Whether ``node`` itself is a comparison this rewriter replaces."""
        if node.kind != "call" or node.value not in _COMPARISONS or len(node.args) != 2:
            return False
        x, y = node.args
        if self.columns_only and (x.kind == "literal" or y.kind == "literal"):
            return False
        return self.float_type(x) is not None or self.float_type(y) is not None

    def needs(self, node: _Node) -> bool:
        return self.rewrites(node) or any(self.needs(a) for a in node.args)

    def build(self, node: _Node) -> pc.Expression:
        if not self.needs(node):
            return self.ser.expression(node)
        if self.rewrites(node) and not node.has_options:
            x, y = node.args
            bx, by = self.build(x), self.build(y)
            return _sql_compare(node.value, bx, by, self.float_type(x), self.float_type(y))
        if node.has_options and node.value in _NULL_CHECKS:
            # is_null / is_valid: their only option is nan_is_null, False in every filter
            # DataFusion pushes (SQL IS NULL is not NaN-aware) and in the ones built here,
            # so the default rebuilds them exactly
            return pc.Expression._call(node.value, [self.build(a) for a in node.args])
        if node.has_options:
            raise FloatRewriteError(f"cannot rebuild {node.value} with options")
        return pc.Expression._call(node.value, [self.build(a) for a in node.args])


_Float = pa.DataType | bool | None
_NULL_CHECKS = ("is_null", "is_valid")
_NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))
_FALSE = pc.scalar(False)


def _sql_compare(
    op: str, x: pc.Expression, y: pc.Expression, xt: _Float, yt: _Float
) -> pc.Expression:
    """``x op y`` as DataFusion compares floats; ``xt`` / ``yt``: the operands' float types
    (``True``: unknown width, taken as float64; ``None``: not a float)."""
    nx = pc.is_nan(x) if xt is not None else _FALSE
    ny = pc.is_nan(y) if yt is not None else _FALSE
    xn = pc.add(x, _zero(xt)) if xt is not None else x
    yn = pc.add(y, _zero(yt)) if yt is not None else y
    base = pc.Expression._call(op, [xn, yn])
    nan_case = {
        "equal": nx & ny,
        "not_equal": ~(nx & ny),
        "less": ~nx & ny,
        "less_equal": ny,
        "greater": nx & ~ny,
        "greater_equal": nx,
    }[op]
    either_null = pc.is_null(x) | pc.is_null(y)
    return pc.if_else(either_null, _NULL_BOOL, pc.if_else(nx | ny, nan_case, base))


def _zero(t: _Float) -> pc.Expression:
    return pc.scalar(pa.scalar(0.0, t if isinstance(t, pa.DataType) else pa.float64()))


def with_sql_float_semantics(
    filter: pc.Expression, schema: pa.Schema, *, columns_only: bool = False
) -> pc.Expression:
    """``filter`` with its float comparisons rewritten to DataFusion's semantics
    (:class:`FloatRewriteError` when it cannot be read or rebuilt).

    ``columns_only``: only comparisons of two non-literal operands (enough for Lance,
    whose column-literal comparisons agree); otherwise all (for pyarrow compute).
    """
    try:
        ser = _Serialized(filter)
    except FloatRewriteError:
        raise
    except Exception as exc:  # private serialization changed
        raise FloatRewriteError(str(exc)) from exc
    rewriter = _Rewriter(ser, schema, columns_only)
    if not rewriter.needs(ser.root):
        return filter
    return rewriter.build(ser.root)
