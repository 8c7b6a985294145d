"""Reader feature flags: which ones this reader understands, and refusing the rest.

An unknown bit of a manifest's ``reader_feature_flags`` means "do not read". Only bits
whose meaning does not change what this reader reports are accepted (checked against
``rust/lance-table/src/feature_flags.rs``); the table is in ``docs/format.md``.
"""

from __future__ import annotations

from lance_sql.errors import UnsupportedFeatureError

DELETION_FILES = 1 << 0
STABLE_ROW_IDS = 1 << 1
USE_V2_FORMAT_DEPRECATED = 1 << 2
TABLE_CONFIG = 1 << 3
BASE_PATHS = 1 << 4
DISABLE_TRANSACTION_FILE = 1 << 5
DATA_OVERLAY_FILES = 1 << 6
COVERED_INDEX_METADATA = 1 << 7
MIXED_DATA_FILE_VERSIONS = 1 << 8
SEMANTIC_TYPES = 1 << 11

KNOWN_READER_FLAGS = (
    DELETION_FILES
    | STABLE_ROW_IDS
    | USE_V2_FORMAT_DEPRECATED
    | TABLE_CONFIG
    | BASE_PATHS
    | DISABLE_TRANSACTION_FILE
    | COVERED_INDEX_METADATA
    | MIXED_DATA_FILE_VERSIONS
)


def unknown_bits(flags: int) -> list[int]:
    """The set bits of ``flags`` this reader does not understand, as powers of two."""
    rest = flags & ~KNOWN_READER_FLAGS
    return [1 << i for i in range(64) if rest >> i & 1]


def check_reader_flags(flags: int, *, path: str) -> None:
    """Raise UnsupportedFeatureError naming the bits and the file if any is unknown."""
    unknown = unknown_bits(flags)
    if unknown:
        bits = ", ".join(str(b) for b in unknown)
        raise UnsupportedFeatureError(
            f"manifest requires reader feature flag bit(s) {bits} (flags={flags}) that "
            "lance-sql does not support",
            path=path,
        )
