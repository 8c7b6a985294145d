"""pylance scanners built from a ``ScannerBuilder`` without pylance's copy of its options."""

from __future__ import annotations

from typing import Any

from lance.dataset import LanceScanner, ScannerBuilder

#: ``ScannerBuilder.to_scanner``'s arguments, read from its code once (None: not readable)
_BUILDER_ARGS: list[tuple[str, ...] | None] = []


def to_scanner(builder: Any) -> Any:
    """``builder.to_scanner()`` without pylance's deep copy of every option.

    pylance 14 deep-copies the builder's options into each scanner, only to
    rebuild the scan for ``to_pandas`` blob handling (0.25 ms per scanner; no
    lance-sql scan uses it). The native scanner gets the same arguments in
    the same order, read from ``to_scanner``'s own code; when they do not
    match the builder's options (another pylance), pylance's path is taken.
    """
    if not _BUILDER_ARGS:
        names = type(builder).to_scanner.__code__.co_names
        args = names[names.index("scanner") + 1 :] if "scanner" in names else ()
        args = args[: args.index("LanceScanner")] if "LanceScanner" in args else ()
        _BUILDER_ARGS.append(args if set(args) == set(vars(builder)) - {"ds"} else None)
    args = _BUILDER_ARGS[0]
    if args is None:
        return builder.to_scanner()
    options = vars(builder)
    native = builder.ds._ds.scanner(*(options[a] for a in args))
    return LanceScanner(native, builder.ds, None)


__all__ = ["ScannerBuilder", "to_scanner"]
