"""Regenerate ``lance_sql/format/_pb`` from the ``.proto`` files next to this script.

Run ``python protos/generate.py`` after editing a ``.proto`` file and commit the
output; ``tests/format/test_pb_generated.py`` fails when the committed modules
differ from what this script produces.

protoc writes ``import file_pb2`` (a top-level module) into modules that import
another of our protos. Those imports are rewritten to absolute package imports so
the generated code works as ``lance_sql.format._pb.xxx_pb2`` without touching
``sys.path``.

The gencode version protoc stamps into the modules must not be newer than the
oldest protobuf runtime the project allows, so the grpcio-tools version (which
bundles protoc) is pinned in pyproject's dev extra.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = PROTO_DIR.parent / "lance_sql" / "format" / "_pb"
PACKAGE = "lance_sql.format._pb"
INIT_TEXT = '"""Generated protobuf modules for the Lance messages in protos/ (do not edit)."""\n'

# "import file_pb2 as file__pb2" -> "from lance_sql.format._pb import file_pb2 as file__pb2"
_LOCAL_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def proto_files() -> list[Path]:
    """The ``.proto`` files to compile, in a stable order."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Compile every proto into ``out_dir`` and return the files written."""
    import grpc_tools
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory() as raw:
        args = [
            "protoc",
            f"-I{PROTO_DIR}",
            f"-I{well_known}",
            f"--python_out={raw}",
            *(p.name for p in proto_files()),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed: {' '.join(args)}")
        local = {p.stem + "_pb2" for p in proto_files()}
        written = []
        for src in sorted(Path(raw).glob("*_pb2.py")):
            text = _LOCAL_IMPORT.sub(
                lambda m: (
                    f"from {PACKAGE} import {m.group(1)} as {m.group(2)}"
                    if m.group(1) in local
                    else m.group(0)
                ),
                src.read_text(),
            )
            dst = out_dir / src.name
            dst.write_text(text)
            written.append(dst)
    init = out_dir / "__init__.py"
    init.write_text(INIT_TEXT)
    written.append(init)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
