"""Layer 1, format: Lance metadata as it is on disk (manifests, schemas, deletion files).

Parses bytes with the protobuf messages in ``protos/``; never decodes data pages
(pylance does that). Imports nothing from higher layers.
"""
