"""The smoke test: the built component is created with sample inputs and every output called.

What Langflow's build cannot show -- an output that crashes on any value, returns the wrong
type or an un-awaited coroutine, or does something the sandbox refuses -- shows here, under
the request's one deadline, in the child that built it.  A failure that sample data may
have caused is a warning, never a verdict.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import traceback
import types

from . import _shared, policy
from ._lfx import Data, DataFrame, Message, call
from ._packages import missing_module, package
from ._shared import OBSERVED, Armed, SandboxViolation, Timeout, finding, first_line

UNPROBEABLE = object()
_TEXT = "hello world"


def probe(inp: object) -> object:
    kind = type(inp).__name__
    default = getattr(inp, "value", None)
    options = getattr(inp, "options", None) or []
    is_list = bool(getattr(inp, "is_list", False))

    def listify(v: object) -> object:
        return [v] if is_list and not isinstance(v, list) else v

    if "Secret" in kind:
        return UNPROBEABLE
    if kind == "BoolInput":
        return default if isinstance(default, bool) else True
    if kind == "IntInput":
        return default if isinstance(default, int) and not isinstance(default, bool) and default else 3
    if kind in ("FloatInput", "SliderInput"):
        return default if isinstance(default, int | float) and default else 0.5
    if kind in ("DropdownInput", "TabInput"):
        return default if default in options else (options[0] if options else default)
    if kind == "MultiselectInput":
        return default if default else options[:1]
    types = getattr(inp, "input_types", None) or []
    # lfx 1.13 renamed Data to JSON and DataFrame to Table (DataInput *is* JSONInput): go by the
    # types an input accepts, not by its class name alone.
    if kind in ("DataInput", "JSONInput") and ("Data" in types or "JSON" in types or kind == "DataInput"):
        return listify(Data(data={"text": _TEXT, "value": 1}))
    if kind == "DataFrameInput":
        return DataFrame([{"text": _TEXT, "value": 1}, {"text": "second row", "value": 2}])
    if kind == "MessageInput":
        return listify(Message(text=_TEXT))
    if kind in ("DictInput", "NestedDictInput", "JSONInput"):  # a JSONInput that takes no Data: a dict
        return default if isinstance(default, dict) and default else {"key": "value"}
    if kind == "FileInput":
        path = os.path.join(_shared.SANDBOX_DIR, "probe.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"{_TEXT}\nsecond line\n")
        return path
    if kind == "HandleInput":
        if "Message" in types:
            return listify(Message(text=_TEXT))
        if "Data" in types or "JSON" in types:
            return listify(Data(data={"text": _TEXT, "value": 1}))
        if "DataFrame" in types or "Table" in types:
            return DataFrame([{"text": _TEXT, "value": 1}])
        if "Text" in types or "str" in types:
            return listify(_TEXT)
        return UNPROBEABLE
    if kind in (
        "TableInput",
        "ToolsInput",
        "McpInput",
        "ModelInput",
        "ConnectionRefInput",
        "DBProviderInput",
    ):
        return UNPROBEABLE if getattr(inp, "required", False) else None
    if isinstance(default, str) and default:
        return listify(default)
    return listify(_TEXT)


_TYPE_NAMES = {
    "Message": "Message",
    "Data": "Data",
    "JSON": "Data",  # lfx 1.13's new name for Data
    "DataFrame": "DataFrame",
    "Table": "DataFrame",  # ... and for DataFrame
    "str": "str",
    "Text": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "dict": "dict",
    "list": "list",
}
_PY_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list}


def _type_ok(value: object, declared: list[str]) -> bool | None:
    """True/False when the declared types can be checked, None when they cannot."""
    classes = []
    for name in declared:
        key = _TYPE_NAMES.get(name)
        if key is None:
            return None
        classes.append({"Message": Message, "Data": Data, "DataFrame": DataFrame}.get(key) or _PY_TYPES[key])
    items = value if isinstance(value, list) and list not in classes else [value]
    return all(isinstance(v, tuple(classes)) for v in items)


MAX_RECORD = 4096
"""The most JSON one recorded sample value may take: ours are a few bytes; a default of 1 MB is not
worth carrying into a test file."""


def sample_record(kind: str, value: object) -> dict:
    """A sample input as plain JSON, so the kernel can write it into a test (the extension
    bundle's, ``langflow/extension.py``): what it is (``Message``, ``Data``, ``DataFrame``, a
    ``file`` with its text, a plain ``value``, a ``list`` of those) and its data. ``unknown`` when
    it cannot be said in JSON (the test then leaves that input at its default)."""
    if kind == "FileInput":
        return {"kind": "file", "text": f"{_TEXT}\nsecond line\n"}
    if isinstance(value, list) and value and all(isinstance(v, Message | Data) for v in value):
        items = [sample_record("", v) for v in value[:20]]
        return {"kind": "list", "items": items} if all(i["kind"] != "unknown" for i in items) else {"kind": "unknown"}
    if isinstance(value, Message):
        record: dict = {"kind": "Message", "text": value.text if isinstance(value.text, str) else ""}
    elif isinstance(value, Data):
        record = {"kind": "Data", "data": value.data}
    elif isinstance(value, DataFrame):
        record = {"kind": "DataFrame", "rows": value.to_dict(orient="records")}
    elif value is None or isinstance(value, str | int | float | bool | list | dict):
        record = {"kind": "value", "value": value}
    else:
        return {"kind": "unknown"}
    try:
        text = json.dumps(record, allow_nan=False)
    except (TypeError, ValueError):
        return {"kind": "unknown"}
    return record if len(text) <= MAX_RECORD else {"kind": "unknown"}


# Not SyntaxError: the component's own code compiled when lfx built it, so a SyntaxError while an
# output runs comes from compiling *data* (a code input given our sample text).
_BUG_TYPES = (NameError, AttributeError, ImportError, TypeError, AssertionError, RecursionError)
_CALL_ERRORS = (
    "required positional argument",
    "unexpected keyword argument",
    "positional argument",
    "is not callable",
    "takes no arguments",
    "missing",
    "got multiple values",
)
# Input classes whose value has one declared Python type in Langflow: an AttributeError on such
# a value (``.text`` on a MessageTextInput's str) fails on every real value, not just on ours.
DECLARED_VALUE_TYPES = {
    "MessageTextInput": str,
    "StrInput": str,
    "MultilineInput": str,
    "PromptInput": str,
    "IntInput": int,
    "FloatInput": float,
    "SliderInput": float,
    "BoolInput": bool,
    "DictInput": dict,
}


def _declared_input(obj: object, probes: dict) -> str | None:
    """The input whose sample value ``obj`` is, when that input declares one value type."""
    for name, (kind, value) in probes.items():
        declared = DECLARED_VALUE_TYPES.get(kind)
        if declared is None:
            continue
        same = obj is value or (type(obj) is type(value) and isinstance(obj, str | int | float) and obj == value)
        if same and isinstance(obj, declared | list):
            return name
    return None


def _is_bug(exc: BaseException, component: object, probes: dict | None = None) -> bool:
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover
        ValidationError = ()  # type: ignore[assignment]
    if isinstance(exc, ValidationError):  # e.g. Data(data=[...])
        return True
    if isinstance(exc, AttributeError):
        # On the component, a class or a module the attribute is missing whatever the input;
        # on an input value of its declared type (a MessageTextInput's str) likewise; on
        # another value it may come from the fake data.
        obj = getattr(exc, "obj", None)
        if obj is component or isinstance(obj, type | types.ModuleType):
            return True
        if obj is not None and probes and _declared_input(obj, probes):
            return True
        return obj is None and f"'{type(component).__name__}' object has no attribute" in str(exc)
    if isinstance(exc, TypeError):
        return any(s in str(exc) for s in _CALL_ERRORS)
    return isinstance(exc, _BUG_TYPES)


def _holds_coroutine(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is, or holds (in a list, tuple, dict or Data), an un-awaited coroutine."""
    if inspect.iscoroutine(value) or isinstance(value, asyncio.Future):
        return True
    if depth >= 2:
        return False
    if isinstance(value, list | tuple | set):
        return any(_holds_coroutine(v, depth + 1) for v in list(value)[:50])
    if isinstance(value, dict):
        return any(_holds_coroutine(v, depth + 1) for v in list(value.values())[:50])
    data = getattr(value, "data", None) if isinstance(value, Data) else None
    return isinstance(data, dict) and _holds_coroutine(data, depth + 1)


def _close_coroutines(value: object, depth: int = 0) -> None:
    """Close what ``_holds_coroutine`` found, so Python does not warn 'never awaited' later."""
    if inspect.iscoroutine(value):
        value.close()
    elif depth < 2 and isinstance(value, list | tuple | set):
        for v in list(value)[:50]:
            _close_coroutines(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in list(value.values())[:50]:
            _close_coroutines(v, depth + 1)


def refused_finding(who: str, since: int, exc: BaseException | None) -> dict:
    """A call the audit hook refused, in the words of the static scan for the same call.

    An ``error`` (rule ``sandbox-refused``): generated code gets the same verdict whichever
    phase sees the behaviour, and a retry prompt that names the call and the line.  For code
    a user brings, the kernel turns it into a labelled ``policy`` finding (``sandbox._merge``).
    """
    refused = OBSERVED["refused"][since:]
    event, line = refused[0] if refused else ("?", None)
    if line is not None:
        line -= OBSERVED.get("line_offset", 0)
        line = line if line > 0 else None
    where = f" at line {line}" if line else ""
    detail = str(exc) if exc is not None else f"'{event}' is not allowed inside a Langflow component validation sandbox"
    if event.startswith("import "):
        module = event.split()[1]
        what, reason = f"imports `{module}`", policy.why(module) or "is refused by the sandbox"
    else:
        what, reason = f"calls `{event}`", policy.event_reason(event)
    return finding(
        "error",
        "smoke",
        f"{who} {what}{where} ({reason}); the validation sandbox refused it, and "
        f"Langflow would run it with the server's secrets. Remove the call (it is refused however it is reached).",
        line=line,
        evidence=detail,
        rule="sandbox-refused",
    )


def smoke(cls: type, code: str, instance: object, template: dict, report: dict, deadline: float) -> None:
    """Create the component with sample inputs and call each output; the verdict goes in ``report``.

    ``report["smoke"]`` ends ``passed``, ``failed`` (with an error finding) or ``skipped``
    (with ``smoke_reason``: a secret, a connection, the network, a refused call, a package).
    """
    run = _SmokeRun(cls, code, report, deadline)
    if run.sample_inputs(instance):
        return
    outputs = run.callable_outputs(template)
    if outputs is None:
        return
    OBSERVED["network"] = False
    with Armed(deadline):
        run.component = cls(_code=code, **run.values)
    for out in outputs:
        if run.call_output(out):
            return
    report["smoke"] = "passed"


class _SmokeRun:
    """One smoke run: the sample values, the component made from them, the report it fills.

    Each step returns True once it has written the verdict (the run stops there), False to go on.
    """

    def __init__(self, cls: type, code: str, report: dict, deadline: float) -> None:
        self.cls, self.code, self.report, self.deadline = cls, code, report, deadline
        self.findings: list[dict] = report["findings"]
        self.values: dict = {}
        self.probes: dict = {}  # input name -> (input class name, sample value)
        self.component: object = None

    def skip(self, reason: str) -> bool:
        self.report.update(smoke="skipped", smoke_reason=reason)
        return True

    def fail(self, found: dict) -> bool:
        self.findings.append(found)
        self.report["smoke"] = "failed"
        return True

    def sample_inputs(self, instance: object) -> bool:
        """A sample value for every input, or the reason none can be made (a secret, a connection)."""
        inputs = list(getattr(instance, "inputs", None) or [])
        secrets = [i.name for i in inputs if "Secret" in type(i).__name__]
        if secrets:
            return self.skip(f"it needs a secret (input '{secrets[0]}')")
        for inp in inputs:
            value = probe(inp)
            if value is UNPROBEABLE:
                kinds = ", ".join(getattr(inp, "input_types", None) or [type(inp).__name__])
                return self.skip(f"input '{inp.name}' needs a connection ({kinds})")
            if value is not None:
                self.values[inp.name] = value
                self.probes[inp.name] = (type(inp).__name__, value)
        # What the outputs are called with, recorded for a test outside the sandbox to repeat.
        self.report["smoke_inputs"] = {n: sample_record(kind, v) for n, (kind, v) in self.probes.items()}
        return False

    def callable_outputs(self, template: dict) -> list[dict] | None:
        """The outputs that name a method, or None (skipped) when there are none to call."""
        outputs = [o for o in template.get("outputs", []) or [] if o.get("method")]
        if outputs:
            return outputs
        self.skip(
            "its outputs are created at run time (update_outputs)"
            if callable(getattr(self.cls, "update_outputs", None)) and "update_outputs" in self.code
            else "it has no output method to call"
        )
        return None

    def call_output(self, out: dict) -> bool:
        """Call one output under the deadline and judge what it raised or returned."""
        name, method_name, declared = out.get("name"), out.get("method"), list(out.get("types") or [])
        if getattr(self.component, method_name or "", None) is None:
            return False
        refused_before = len(OBSERVED["refused"])
        who = f"output `{name}` ({method_name}())"
        try:
            with Armed(self.deadline):
                result = call(self.component, method_name)
        except Timeout:
            raise
        except SandboxViolation as exc:
            self.findings.append(refused_finding(who, refused_before, exc))
            return self.skip(f"output '{name}' did something the sandbox refuses ({exc})")
        except BaseException as exc:
            self.record(name, method_name, raised=type(exc).__name__)
            return self.judge_error(exc, name, method_name, refused_before)
        self.record(name, method_name, returned=type(result).__name__)
        return self.judge_result(result, name, method_name, declared, refused_before)

    def record(self, name: str, method: str, **outcome: str) -> None:
        """What one output did on the sample inputs (the class name it returned, or raised)."""
        self.report.setdefault("smoke_outputs", {})[name] = {"method": method, **outcome}

    def judge_error(self, exc: BaseException, name: str, method_name: str, refused_before: int) -> bool:
        """An output raised: a refusal, the network, a missing package, a bug -- or maybe the sample data.

        Called while ``exc`` is being handled, so ``traceback.format_exc()`` is its traceback.
        """
        if len(OBSERVED["refused"]) > refused_before:  # refused, and the code turned it into another error
            self.findings.append(refused_finding(f"output `{name}` ({method_name}())", refused_before, exc))
            return self.skip(f"output '{name}' did something the sandbox refuses")
        if OBSERVED["network"]:
            return self.skip(f"output '{name}' uses the network")
        if isinstance(exc, SystemExit | KeyboardInterrupt):
            return self.fail(
                finding(
                    "error",
                    "smoke",
                    f"output `{name}` ({method_name}) tried to stop the process ({type(exc).__name__}).",
                    evidence=traceback.format_exc(),
                    rule="smoke-crash",
                )
            )
        module = missing_module(exc) if isinstance(exc, ImportError) else None
        if module:
            return self.skip(f"output '{name}' needs {module} ({package(module)['fix']})")
        if _is_bug(exc, self.component, self.probes):
            which = _declared_input(getattr(exc, "obj", None), self.probes) if isinstance(exc, AttributeError) else None
            hint = ""
            if which:
                kind, value = self.probes[which]
                hint = (
                    f" Input '{which}' is a {kind}, whose value is a {type(value).__name__}: "
                    "every value it receives in a flow fails the same way."
                )
            return self.fail(
                finding(
                    "error",
                    "smoke",
                    f"output `{name}` crashes when called: {method_name}() raised {type(exc).__name__} "
                    f"with sample inputs: {first_line(exc)}{hint}",
                    evidence=traceback.format_exc(),
                    rule="smoke-crash",
                )
            )
        self.findings.append(
            finding(
                "warning",
                "smoke",
                f"Output '{name}' raised {type(exc).__name__} on sample inputs ({str(exc)[:160]}); "
                "this may be caused by the fake data, so it was not counted as a failure.",
                rule="smoke-probe",
            )
        )
        return False

    def judge_result(self, result: object, name: str, method_name: str, declared: list, refused_before: int) -> bool:
        """An output returned: a swallowed refusal, the network, a coroutine, the wrong type, None."""
        if len(OBSERVED["refused"]) > refused_before:  # refused, and the code swallowed the refusal
            _close_coroutines(result)
            self.findings.append(refused_finding(f"output `{name}` ({method_name}())", refused_before, None))
            return self.skip(f"output '{name}' did something the sandbox refuses")
        if OBSERVED["network"]:
            return self.skip(f"output '{name}' uses the network")
        if _holds_coroutine(result):
            _close_coroutines(result)
            return self.fail(
                finding(
                    "error",
                    "smoke",
                    f"output `{name}` returns an un-awaited coroutine: {method_name}() is a plain method that "
                    "calls an async helper without `await`; Langflow passes the coroutine on as the value. "
                    f"Make it `async def {method_name}` and `await` the helper.",
                    rule="coroutine",
                )
            )
        if _type_ok(result, declared) is False:
            got = type(result).__name__
            hint = " Wrap the text: Message(text=...)." if got == "str" and "Message" in declared else ""
            return self.fail(
                finding(
                    "error",
                    "smoke",
                    f"output `{name}` returns the wrong type: Output '{name}' ({method_name}) returned {got} "
                    f"but is declared as {' | '.join(declared)}.{hint}",
                    rule="wrong-type",
                )
            )
        if result is None:
            self.findings.append(
                finding("warning", "smoke", f"Output '{name}' returned None for the sample inputs.", rule="none")
            )
        return False
