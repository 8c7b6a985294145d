"""Entry point of the ``lance-sql`` command: errors become one line on stderr, exit code 1
(runtime, data) or 2 (usage); ``--debug`` shows the traceback."""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from lance_sql.cli.session import UsageError

PROG = "lance-sql"


def _add_bindings(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ns",
        action="append",
        default=[],
        metavar="NAME=ROOT",
        help="register a (partitioned) namespace as table NAME (repeatable)",
    )
    p.add_argument(
        "--lance",
        action="append",
        default=[],
        metavar="NAME=URI",
        help="register a Lance dataset as table NAME (repeatable)",
    )
    p.add_argument("query", nargs="?", help="SQL text (or use -f FILE)")
    p.add_argument("-f", "--file", help="file with one or more ';'-separated statements")


def _version() -> str:
    from importlib.metadata import version

    return version("lance-sql")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="SQL over Lance datasets and partitioned namespaces (DataFusion).",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("demo", help="build sample namespaces and run sql_examples/")
    p.add_argument("--dir", default="lance-sql-demo", help="folder for the demo data")
    p.add_argument("--max-rows", type=int, default=10, help="rows shown per result")
    p.add_argument(
        "--data-only", action="store_true", help="build the sample namespaces, run no query"
    )

    p = sub.add_parser("sql", help="run queries and print the results")
    _add_bindings(p)
    p.add_argument("--format", choices=("csv", "json", "parquet"), help="file format for --output")
    p.add_argument("--output", "-o", help="write the (last) result to this file")
    p.add_argument("--max-rows", type=int, default=50, help="rows shown per result")
    p.add_argument("--timing", action="store_true", help="print the time of each statement")

    p = sub.add_parser("explain", help="show the plan with partition pruning details")
    _add_bindings(p)
    p.add_argument("--analyze", action="store_true", help="EXPLAIN ANALYZE (runs the query)")

    def on_root(name: str, help: str, root: str = "partitioned namespace root") -> Any:
        p = sub.add_parser(name, help=help)
        p.add_argument("root", help=root)
        return p

    p = on_root("inspect", "specs, schema, partitions and sizes of a namespace")
    p.add_argument("--json", action="store_true", help="print JSON")
    on_root("repair", "rebuild partition columns and pins of a __manifest another writer damaged")
    p = on_root("compact", "compact partition tables with many small fragments")
    p.add_argument("--target-rows-per-fragment", type=int, default=1 << 20)
    p = on_root("expire", "remove old versions no live __manifest version pins")
    p.add_argument("--older-than", required=True, help="age to keep, e.g. 7d, 12h, 30m")
    p = on_root("partitions", "partition tables a filter selects, as JSON")
    p.add_argument("--where", help="SQL filter over the namespace columns")
    p = on_root(
        "import",
        "create or append to a namespace from a data file",
        "partitioned namespace root (created if missing)",
    )
    p.add_argument("--from", dest="source", required=True, help="data.parquet|csv|json")
    p.add_argument("--format", choices=("parquet", "csv", "json"), help="override the file format")
    p.add_argument("--spec", help="partition spec JSON (required to create)")
    p.add_argument("--schema", help="namespace schema JSON (JsonArrowSchema); default: the file's")
    prog = p.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None)
    prog.add_argument("--no-progress", dest="progress", action="store_false")
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    """Run ``cmd_<command>(args, stdout)``; a command's module is imported when it runs."""
    fn: Any
    if args.command == "demo":
        from lance_sql.cli.demo import cmd_demo as fn
    elif args.command == "import":
        from lance_sql.cli.importer import cmd_import as fn
    else:
        from lance_sql.cli import commands

        fn = getattr(commands, f"cmd_{args.command}")
    return fn(args, sys.stdout)  # type: ignore[no-any-return]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


#: a Rust source position pylance / DataFusion append to messages
_RUST_SOURCE = re.compile(r",?\s*\(?/\S+\.rs:\d+:\d+\)?")
#: wrappers DataFusion and Arrow put in front of the message that says what is wrong
_WRAPPERS = re.compile(
    r"^(?:(?:DataFusion|Arrow|Cast|Execution|External|Python) error:\s*)+", re.IGNORECASE
)


def _root_cause(msg: str) -> str:
    """The deepest meaningful line of a DataFusion/Arrow error chain (``caused by``)."""
    parts = [p.strip() for p in re.split(r"\n\s*caused by\s*\n", msg) if p.strip()]
    deepest = parts[-1].splitlines()[0] if parts else msg
    return _WRAPPERS.sub("", deepest).strip() or deepest


def _one_line(exc: BaseException) -> str:
    msg = _ANSI.sub("", str(exc)).strip() or type(exc).__name__
    from lance_sql.errors import LanceSqlError

    first = msg.splitlines()[0] if isinstance(exc, LanceSqlError) else _root_cause(msg)
    first = _RUST_SOURCE.sub("", first)
    return first if len(first) <= 500 else first[:497] + "..."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:  # argparse has already printed usage + message
        return int(e.code) if isinstance(e.code, int) else 2
    try:
        return _dispatch(args)
    except UsageError as e:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `lance-sql ... | head`: the reader left, stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
