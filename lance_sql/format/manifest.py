"""Read one manifest file: check the footer, find the message, parse it with protobuf.

Layout: ``... | u32 length | Manifest | u64 position | u16 major | u16 minor | "LANC"``.
Every offset is checked against the file size *before* any read, so a corrupted or
hostile file gives :class:`FormatError` quickly, never a huge read or a raw decode error.
"""

from __future__ import annotations

import struct

from google.protobuf.message import DecodeError

from lance_sql.errors import FormatError
from lance_sql.format._pb import table_pb2
from lance_sql.format.storage import Location, file_size, read_range

MAGIC = b"LANC"
FOOTER_SIZE = 16
_FOOTER = struct.Struct("<QHH4s")
_LENGTH = struct.Struct("<I")

# One read of the file's tail usually holds the whole message; bigger manifests
# take a second read of exactly the missing range.
TAIL_READ = 256 * 1024


def parse_manifest_bytes(data: bytes, *, path: str) -> table_pb2.Manifest:
    """Parse a complete manifest file held in memory (``path`` is for messages)."""
    return _parse(data, 0, len(data), path)


def read_manifest(loc: Location, *, size: int | None = None) -> table_pb2.Manifest:
    """Read and parse the manifest file at ``loc`` (``size`` saves a stat when known)."""
    if size is None:
        size = file_size(loc)
    if size < FOOTER_SIZE + _LENGTH.size:
        raise FormatError(f"file is {size} bytes, too short to be a Lance manifest", path=loc.url)
    start = max(0, size - TAIL_READ)
    tail = read_range(loc, start, size)
    if len(tail) != size - start:
        raise FormatError(
            f"file shrank while reading ({len(tail)} of {size - start} bytes)", path=loc.url
        )
    position = _footer_position(tail, size, loc.url)
    if position < start:
        head = read_range(loc, position, start)
        if len(head) != start - position:
            raise FormatError("file shrank while reading", path=loc.url)
        tail = head + tail
        start = position
    return _parse(tail, start, size, loc.url)


def _footer_position(buf: bytes, size: int, path: str) -> int:
    """Validate the footer at the end of ``buf`` and return the message position."""
    if len(buf) < FOOTER_SIZE:
        raise FormatError(f"file is {len(buf)} bytes, too short to be a Lance manifest", path=path)
    position, _major, _minor, magic = _FOOTER.unpack_from(buf, len(buf) - FOOTER_SIZE)
    if magic != MAGIC:
        raise FormatError(
            f"not a Lance manifest: footer magic is {magic!r}, expected {MAGIC!r}", path=path
        )
    if position > size - FOOTER_SIZE - _LENGTH.size:
        raise FormatError(
            f"manifest position {position} is outside the file ({size} bytes)", path=path
        )
    return position


def _parse(buf: bytes, buf_start: int, size: int, path: str) -> table_pb2.Manifest:
    """Parse the message, with ``buf`` holding file bytes ``[buf_start, size)``."""
    position = _footer_position(buf, size, path)
    offset = position - buf_start
    (length,) = _LENGTH.unpack_from(buf, offset)
    end = position + _LENGTH.size + length
    if end > size - FOOTER_SIZE:
        raise FormatError(
            f"manifest message of {length} bytes at position {position} runs past the footer "
            f"(file is {size} bytes)",
            path=path,
        )
    body = memoryview(buf)[offset + _LENGTH.size : offset + _LENGTH.size + length]
    manifest = table_pb2.Manifest()
    try:
        manifest.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError, RecursionError) as exc:
        raise FormatError(f"corrupted manifest message: {exc}", path=path) from exc
    return manifest
