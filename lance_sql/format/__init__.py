"""Layer 1, format: Lance metadata as it is on disk (manifests, schemas, deletion files).

Parses bytes with the protobuf messages in ``protos/`` (``_pb`` is generated: do not
edit); never decodes data pages (pylance does that). The entry point is
``metadata.open_metadata``; the layout read is described in ``docs/format.md``.
"""
