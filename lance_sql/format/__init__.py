"""Layer 1, format: Lance metadata as it is on disk (manifests, schemas, deletion files).

Parses bytes with the protobuf messages in ``protos/``; never decodes data pages
(pylance does that). Imports nothing from higher layers.

Modules, one question each:

- ``storage``: which fsspec filesystem and path a URI means; reading bytes.
- ``versions``: which manifest files exist, what a version or tag resolves to.
- ``manifest``: the bytes of one manifest file to a protobuf ``Manifest``.
- ``feature_flags``: whether this reader may read a manifest at all.
- ``schema``: Lance logical types and field lists to a ``pyarrow.Schema``.
- ``deletions``: deletion files to sorted row offsets.
- ``metadata``: the public entry point, ``open_metadata`` -> ``DatasetMetadata``.
- ``_pb``: generated protobuf code (``protos/generate.py``; do not edit).
"""
