"""bucket[N] / multi_bucket[N]: hashes, enumerated where the modulus allows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lance_sql.spec.literals import in_pred
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Column,
    IsNull,
    Leaf,
    Predicate,
    Term,
    TransformTerm,
)
from lance_sql.spec.transforms.base import (
    MAX_BUCKET_ENUMERATION,
    FieldTransform,
    TermForm,
    enumerate_conjunction,
    equal_literals,
    holds,
    plain,
    same_column,
)
from udfs.canonical import is_supported

# murmur3 / murmur3_multi as written, or as the SQL dispatch renames a call for its argument
# types (``__lance_murmur3__int64``, ``__lance_murmur3_multi__int64__utf8``), in any case
_HASH_CALL = re.compile(r"(__lance_)?murmur3(_multi)?(?(1)__[a-z0-9_]+)", re.IGNORECASE)


def is_hash_call(function: str) -> bool:
    """Whether a SQL function name calls the hash the bucket transforms apply."""
    return _HASH_CALL.fullmatch(function) is not None


@dataclass(frozen=True)
class HashForm(TermForm):
    """A term over ``murmur3(c)`` / ``murmur3_multi(c0, c1, ...)``, by ``name``:

    - ``murmur3``: the hash itself;
    - ``bucket``: ``abs(murmur3(c)) % N``, bucket[N] (multi_bucket[N] over several columns);
    - ``hash_mod``: ``murmur3(c) % N``; SQL's ``%`` takes the sign of the dividend, so in (-N, N).
    """

    name: str

    def sql(self, term: TransformTerm) -> str:
        fn = "murmur3" if len(term.columns) == 1 else "murmur3_multi"
        call = f"{fn}({', '.join(c.sql() for c in term.columns)})"
        if self.name == "murmur3":
            return call
        return f"{'abs(' + call + ')' if self.name == 'bucket' else call} % {term.param}"

    def values(self, term: TransformTerm, columns: list[pa.Array]) -> pa.Array:
        import udfs.hashing
        import udfs.transforms

        one = len(columns) == 1
        if self.name == "bucket":
            if one:
                return plain(udfs.transforms.bucket(columns[0], term.param))
            return plain(udfs.transforms.multi_bucket(columns, term.param))
        hashes = plain(
            udfs.hashing.murmur3(columns[0]) if one else udfs.hashing.murmur3_multi(columns)
        )
        if self.name == "murmur3":
            return hashes
        h = hashes.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        r = np.fmod(h, term.param).astype(np.int32)
        return pa.array(r, pa.int32(), mask=hashes.is_null().to_numpy(zero_copy_only=False))


MURMUR3, BUCKET, HASH_MOD = HashForm("murmur3"), HashForm("bucket"), HashForm("hash_mod")


def hash_term(function: str, columns: tuple[Column, ...]) -> TransformTerm | None:
    """The term of a SQL call ``function(columns)`` when it is the hash, else None."""
    return TransformTerm(MURMUR3, columns) if columns and is_hash_call(function) else None


def is_hash_term(term: Term) -> bool:
    return isinstance(term, TransformTerm) and term.transform == MURMUR3


def modulo_term(hashed: Term, n: int, *, absolute: bool) -> TransformTerm | None:
    """``abs(h) % n`` (the bucket) or ``h % n`` of a hash term ``h``, else None."""
    if not is_hash_term(hashed) or n <= 0:
        return None
    return TransformTerm(BUCKET if absolute else HASH_MOD, hashed.columns, param=n)


class BucketTransform(FieldTransform):
    """bucket[N] / multi_bucket[N] = ``abs(murmur3[_multi](cols)) % N``."""

    @classmethod
    def accepts(cls, transform: Transform, t: pa.DataType) -> bool:
        # the types murmur3 has canonical bytes for (NOTES 2.1; decided in udfs.canonical)
        return is_supported(t) and not pa.types.is_null(t)

    @classmethod
    def takes_sources(cls, transform: Transform, count: int) -> bool:
        return count >= 1 if transform.type == "multi_bucket" else count == 1

    @classmethod
    def default_name(cls, transform: Transform, columns: str, taken: set[str]) -> str:
        name = f"{columns}_bucket_{transform.num_buckets}"
        if name in taken and transform.type == "multi_bucket":  # taken by a bucket field
            name = f"{columns}_multi_bucket_{transform.num_buckets}"
        return name

    def __init__(self, field: PartitionField, sources: tuple[Column | None, ...]) -> None:
        super().__init__(field, sources)
        self.num_buckets = int(field.transform.num_buckets)
        self._null_preserving = len(sources) == 1

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        if len(self.sources) != 1:
            return FALSE if strict else TRUE
        return super()._on_source(leaf, strict)

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        if len(self.sources) == 1:
            return TRUE
        return enumerate_conjunction(self, leaves)

    def _same_columns(self, term: TransformTerm) -> bool:
        return len(term.columns) == len(self.sources) and all(
            same_column(c, s) for c, s in zip(term.columns, self.sources, strict=True)
        )

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        if not isinstance(term.transform, HashForm) or not self._same_columns(term):
            return FALSE if strict else TRUE
        if isinstance(leaf, IsNull):
            # the hash (and so the term) is NULL exactly when the bucket is NULL
            return IsNull(self.partition_column, leaf.negated)
        n = self.num_buckets
        if term.transform == MURMUR3:
            if strict:
                return FALSE
            hashes = equal_literals(leaf)
            if hashes is None:
                return TRUE
            return in_pred(
                self.partition_column,
                [self._value_literal(abs(int(h.value)) % n) for h in hashes],
            )
        m = term.param
        if n % m == 0 and n <= MAX_BUCKET_ENUMERATION:
            # the partition value p determines the term: bucket_M = p % M exactly;
            # murmur3 % M is p % M or -(p % M) (the hash's sign is unknown).
            keep = []
            for p in range(n):
                r = p % m
                candidates = {r} if term.transform == BUCKET else {r, -r}
                results = [holds(leaf, c) for c in candidates]
                ok = all(x is True for x in results) if strict else any(x is True for x in results)
                if ok:
                    keep.append(p)
            if len(keep) == n:
                return IsNull(self.partition_column, negated=True)
            return in_pred(self.partition_column, [self._value_literal(p) for p in keep])
        if strict:
            return FALSE
        if m % n == 0:
            values = equal_literals(leaf)
            if values is None:
                return TRUE
            lo = 0 if term.transform == BUCKET else -(m - 1)
            ps = sorted({abs(int(r.value)) % n for r in values if lo <= int(r.value) <= m - 1})
            return in_pred(self.partition_column, [self._value_literal(p) for p in ps])
        return TRUE
