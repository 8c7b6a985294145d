"""Register pylance's Arrow extension types without requiring pandas.

``lance.blob`` and ``lance._arrow.bf16`` import without pandas and are always
registered; ``lance.arrow`` (the image types) fails to import without pandas, so it is
registered only when it imports (the image types then read as their storage types).
"""

from __future__ import annotations

import contextlib

_DONE = False


def register_lance_extension_types() -> None:
    """Make pyarrow know every pylance extension type that can be loaded here (idempotent)."""
    global _DONE
    if _DONE:
        return
    import lance._arrow.bf16  # lance.bfloat16; no pandas needed
    import lance.blob  # lance.blob.v2; no pandas needed

    with contextlib.suppress(ImportError):  # pandas missing: see the module docstring
        import lance.arrow  # noqa: F401  (image types; needs pandas in pylance 14)
    _DONE = True
