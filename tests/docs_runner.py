"""Run one doc file's blocks in order, like a notebook (the docs test's child process).

Usage: ``python tests/docs_runner.py BLOCKS.json`` from the folder the blocks run
in. Python blocks share one globals dict; bash blocks run in the same folder.
On the first failing block it prints ``FAILED <file>:<line>`` and the error,
and exits 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as f:
        blocks = json.load(f)
    scope: dict[str, object] = {"__name__": "__main__"}
    for b in blocks:
        where = f"{b['path']}:{b['line']}"
        print(f"--- {where} ({b['lang']})", flush=True)
        if b["lang"] == "python":
            try:
                # Line numbers in tracebacks are the doc file's own.
                code = compile("\n" * (b["line"] - 1) + b["code"], b["path"], "exec")
                exec(code, scope)
            except BaseException:
                sys.stdout.flush()
                print(f"FAILED {where}", file=sys.stderr)
                traceback.print_exc()
                return 1
            sys.stdout.flush()
        else:
            rc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b["code"]]).returncode
            if rc != 0:
                print(f"FAILED {where}: bash exited with {rc}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
