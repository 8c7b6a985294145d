"""Reader feature flags: which ones this reader understands, and refusing the rest.

A manifest's ``reader_feature_flags`` lists features a reader must understand;
an unknown bit means "do not read". The bits below were checked against the
Lance sources (``rust/lance-table/src/feature_flags.rs``) and against pylance
14.0.2, which opens datasets with bits 1, 2, 4, 8, 16, 32, 128, 256 and 2048 and
refuses 64, 512 and 1024.

This reader accepts only bits whose meaning does not change what it reports:

=====  ===========================  ==========================================
bit    meaning                      why it is safe here
=====  ===========================  ==========================================
1      deletion files               read by :mod:`deletions`
2      stable row ids               row-id sequences are not needed for counts
4      v2 data files (deprecated)   data pages are decoded by pylance
8      table config present         exposed as ``config``
16     multiple base paths          exposed as ``base_paths``; paths resolved
32     no transaction files         a writer concern only
128    covering index metadata      indices are not read by this layer
256    mixed data-file versions     per-file versions exposed; pylance decodes
=====  ===========================  ==========================================

Refused: 64 (data overlay files change cell values), 512 and 1024 (fragment
reuse index variants), 2048 (semantic logical types: different type strings)
and every higher bit.
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
