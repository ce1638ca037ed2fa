"""Runs one flow for real with lfx's own runner, in a process of its own (see ``flows.local``).

Started as ``python -I -u _local_runner.py`` with the request as JSON on stdin; it imports only
lfx, so it can run inside bubblewrap with nothing but the interpreter bound.  What the flow's
components print goes to stderr; the one JSON answer goes to the saved stdout, written last.
"""

import asyncio
import json
import os
import sys


def main() -> None:
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a component's print() must not corrupt the answer
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    os.environ.update(request.get("env") or {})  # only the variables the flow reads
    try:
        from lfx.run.base import run_flow

        out = asyncio.run(
            run_flow(
                flow_json=json.dumps(request["flow"]),
                input_value=request["input"],
                output_format="json",
                check_variables=True,
                check_dependencies=True,
            )
        )
        ok = bool(out.get("success", True))
        result = {
            "ok": ok,
            "text": str(out.get("result", "")) if ok else "",
            "component": out.get("component"),
            "error": None if ok else str(out.get("error") or out),
        }
    except BaseException as exc:  # reported, never a traceback in the user's notebook
        result = {"ok": False, "text": "", "component": None, "error": f"{type(exc).__name__}: {exc}"}
    answer.write(json.dumps(result, default=str))
    answer.flush()
    os._exit(0)  # not waiting for threads a component left behind (lfx's executor, a stuck call)


if __name__ == "__main__":
    main()
