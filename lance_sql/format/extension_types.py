"""Register pylance's Arrow extension types without requiring pandas.

pylance 14 defines ``lance.blob.v2`` in ``lance.blob`` and ``lance.bfloat16`` in
``lance._arrow.bf16``; both import without pandas. ``lance.arrow`` (which also
registers the image extension types) imports ``PandasBFloat16Array``, which
exists only when pandas is installed, so ``import lance.arrow`` fails without it
(``cannot import name 'PandasBFloat16Array'``). pylance does not depend on
pandas and neither does lance-sql: the pandas-free modules are registered
always, ``lance.arrow`` only when it imports. Without pandas, the image types
(``lance.image_uri``, ``lance.encoded_image``, ``lance.fixed_shape_image_tensor``)
read as their storage types with the extension metadata kept, which is what
pylance itself returns in such an environment.
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
