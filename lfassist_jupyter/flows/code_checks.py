"""Whole-flow checks that come before wiring: is there a flow, is each node one node, does its code parse?

lfx's spec parser binds an edge to the *last* node of a duplicated id (the first is left
orphaned, with a misleading error about it), and a dict keyed by id makes a duplicate in
flow JSON vanish; an empty flow has nothing to be wrong with; a node's embedded ``code`` is
what Langflow runs, and ``lfx run`` fails on a node whose code does not parse.  So before
anything else, ``validate_flow`` asks this module, which reads the text and the JSON itself
(no lfx: ``ast.parse`` only, nothing executed in this process).

Code that parses but is custom (no built-in carries the same code) is loaded by lfx in the
catalogue's sandbox as lfx loads a flow's node (``FlowSandbox.component_verdicts``: each code in
a child of its own, so that no node's code can write another's verdict), never here, and its
error is named per node.  lfx's own code is neither parsed nor loaded again; the sandbox remembers
its verdicts (they are facts of its lfx), so validating a flow a second time costs no sandbox request.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import node_name
from lfassist_jupyter.sandbox.answers import ComponentTemplate, NodeCode

from .packages import package_need
from .results import FlowProblem, Need
from .spec_text import spec_nodes

if TYPE_CHECKING:
    from lfassist_jupyter.ports import FlowSandbox

    from .catalog import Catalog


def spec_errors(text: str, catalog: Catalog) -> list[FlowProblem]:
    """Duplicate node ids and an empty ``nodes:`` section, read from the spec's own lines; and
    the code of each component the spec uses (from ``catalog``), parsed."""
    ids = spec_nodes(text)
    if ids is None:
        return []
    if not ids:
        return [
            FlowProblem(
                code="structure",
                message="The flow is empty: its 'nodes:' section lists no component.",
                fix="Add at least one node line, e.g. `A: ChatInput`.",
            )
        ]
    errors = []
    counts = Counter(i for i, _, _ in ids)
    for node_id in [i for i in dict.fromkeys(i for i, _, _ in ids) if counts[i] > 1]:
        lines = [f"line {n} ({kind})" for i, kind, n in ids if i == node_id]
        errors.append(
            FlowProblem(
                code="structure",
                node=node_id,
                node_id=node_id,
                message=f"Node id {node_id!r} is used {counts[node_id]} times ({', '.join(lines)}); "
                "edges and config would bind to the last one only.",
                fix=f"Give each node its own id (e.g. {node_id}2 for the second).",
            )
        )
    registry = catalog.registry
    for node_id, kind, _ in ids:
        entry = registry.get(kind)
        code = node_code({"data": {"node": entry}}) if isinstance(entry, dict) else None
        problem = code_problem(code) if code is not None else None
        if problem:
            errors.append(
                FlowProblem(
                    code="bad_value",
                    node=node_id,
                    field="code",
                    message=f"{node_id} ({kind}): the component's code does not parse: {problem}. "
                    "Langflow cannot load this node.",
                    fix=f"Fix or regenerate the {kind} component.",
                )
            )
    return errors


def json_errors(flow: dict[str, Any], builtin_codes: frozenset[str] = frozenset()) -> list[FlowProblem]:
    """Duplicate node ids, an empty flow, and node code that does not parse (flow JSON); the code
    of lfx's own components (``builtin_codes``) parses and is not parsed again."""
    nodes = [n for n in facts.nodes(flow) if "id" in n]
    components = [n for n in nodes if facts.is_component(n)]
    if not components:
        return [
            FlowProblem(
                code="structure",
                message="The flow is empty: it has no component nodes"
                + (" (only notes)." if nodes else ".")
                + " Nothing would run.",
                fix="Add components, or build the flow from a spec with `build_flow`.",
            )
        ]
    errors = []
    counts = Counter(facts.node_id(n) for n in nodes)
    for node_id in [i for i in dict.fromkeys(facts.node_id(n) for n in nodes) if counts[i] > 1]:
        names = [node_name(n) for n in nodes if facts.node_id(n) == node_id]
        errors.append(
            FlowProblem(
                code="structure",
                node=names[0],
                node_id=node_id,
                message=f"Node id {node_id!r} is used by {counts[node_id]} nodes ({', '.join(names)}); "
                "Langflow keeps one of them and the edges bind to it.",
                fix="Give each node a unique id.",
            )
        )
    for node in components:
        code = node_code(node)
        if code is None or (isinstance(code, str) and code in builtin_codes):
            continue
        problem = code_problem(code)
        if problem:
            errors.append(
                FlowProblem(
                    code="bad_value",
                    node=node_name(node),
                    node_id=facts.node_id(node),
                    field="code",
                    message=f"{node_name(node)}'s code does not parse: {problem}. Langflow cannot load this node.",
                    fix="Fix the code, or replace the node with a fresh copy of the component.",
                )
            )
    return errors


def node_code(node: dict[str, Any]) -> object | None:
    """The ``code`` a node carries (None when it carries none)."""
    field = facts.fields(node).get("code")
    if not isinstance(field, dict) or "value" not in field or field.get("value") in (None, ""):
        return None
    return field["value"]


_PARSED: dict[bytes, str | None] = {}  # sha256 of a code -> why it does not parse (None: it does)


def code_problem(code: object) -> str | None:
    """Why ``code`` cannot be a component's source (it does not parse), or None.  Remembered by
    the code's hash: parsing a node's code is most of a flow's check, and the same code comes
    back with every validation of the flow."""
    if not isinstance(code, str):
        return f"it is a {type(code).__name__}, not text"
    key = _digest(code)
    if key in _PARSED:
        return _PARSED[key]
    try:
        ast.parse(code)
        problem = None
    except SyntaxError as exc:
        problem = f"SyntaxError: {exc.msg}" + (f" (line {exc.lineno})" if exc.lineno else "")
    except (ValueError, MemoryError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {exc}"[:200]
    _remember(_PARSED, key, problem)
    return problem


def _digest(*parts: str) -> bytes:
    import hashlib

    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.digest()


def _remember(cache: dict, key: bytes, value: Any, size: int = 1024) -> None:
    if len(cache) >= size:
        cache.pop(next(iter(cache)))
    cache[key] = value


def check(flow: object, catalog: Catalog) -> tuple[list[FlowProblem], list[str], list[Need], list[str]]:
    """(errors, warnings, needs, unjudged) of the whole-flow checks on spec text or on flow JSON (a
    dict that passed the shape check); ``unjudged``: the nodes whose code the sandbox could not
    judge (it gave no verdict in time, or could not ask lfx), each as a line.  Code no lfx built-in
    carries is built in the catalogue's sandbox when everything parses (for spec text: the custom
    components of ``catalog`` it uses)."""
    builtin = catalog.builtin_codes
    if isinstance(flow, str):
        errors = spec_errors(flow, catalog)
        if errors:
            return errors, [], [], []
        registry = catalog.registry
        kinds = dict.fromkeys(kind for _, kind, _ in spec_nodes(flow) or [] if isinstance(registry.get(kind), dict))
        nodes = [{"id": kind, "data": {"type": kind, "node": registry[kind]}} for kind in kinds]
        return custom_code_errors({"nodes": nodes}, builtin, catalog.sandbox)
    if not isinstance(flow, dict):
        return [], [], [], []
    errors = json_errors(flow, builtin)
    if errors:
        return errors, [], [], []
    return custom_code_errors(flow, builtin, catalog.sandbox)


def _called_methods(node: dict[str, Any], used: set[Any]) -> list[tuple[str, str]]:
    """(output, method) of the saved outputs lfx calls when the node runs: those an edge leaves
    from (``used``), or every output when none does (``Component._get_outputs_to_process``)."""
    outputs = [
        (str(o.get("name")), o["method"])
        for o in facts.outputs(node)
        if isinstance(o.get("method"), str) and o.get("method")
    ]
    return [(name, method) for name, method in outputs if not used or name in used]


def custom_code_errors(
    flow: dict[str, Any], builtin_codes: frozenset[str], sandbox: FlowSandbox | None
) -> tuple[list[FlowProblem], list[str], list[Need], list[str]]:
    """Build each node whose code no built-in carries, in ``sandbox``; name the ones lfx refuses
    (and, apart, the ones the sandbox gave no verdict on: not judged, never passed).

    Three causes are told apart, because they call for different fixes: the flow's code is
    wrong (an error); it imports a module gone from a package that *is* installed, or its saved
    output calls a method its code no longer has (an error naming the module or method: code
    saved by another Langflow version, which lfx refuses too); or it needs a package the
    sandbox's environment lacks (a ``package`` need with its ``%pip install`` line: the flow is
    not broken, this environment is short of it).

    The codes lfx has not judged yet are loaded each in a sandboxed child of its own
    (``_verdicts``): a verdict comes from a process in which no other node's code ran, so it can
    be remembered by the code's hash."""
    used: dict[Any, set[Any]] = {}
    for source, output, _, _ in map(facts.ports, facts.edges(flow)):
        used.setdefault(source, set()).add(output)
    todo = []
    for node in facts.components(flow):
        code = node_code(node)
        if isinstance(code, str) and code not in builtin_codes:
            todo.append((node, code, _called_methods(node, used.get(node.get("id"), set()))))
    asked = [NodeCode(code, tuple(sorted({m for _, m in called})), _naming(node)) for node, code, called in todo]
    answers = _verdicts(asked, sandbox)
    errors: list[FlowProblem] = []
    warnings: list[str] = []
    needs: list[Need] = []
    unjudged: list[str] = []
    for (node, _code, called), answer in zip(todo, answers, strict=True):
        name, nid = node_name(node), facts.node_id(node)
        at = {"node": name, "node_id": nid, "field": "code"}
        if answer.ok or answer.retired is not None:
            if answer.retired is not None:  # lfx loads it as the retired stand-in, whose build refuses
                errors.append(retired_problem(name, nid, answer.retired.component, answer.retired.message))
            gone = set(answer.missing_methods)
            for output, method in called:
                if method in gone:
                    errors.append(
                        FlowProblem(
                            code="missing_output",
                            **{**at, "field": output},
                            message=f"{name}'s saved output {output!r} calls {method}(), which its code does not "
                            "have (the node was saved by another version of the component); lfx stops there.",
                            fix=f"Replace {name} with a fresh copy of its component, or take a different output.",
                        )
                    )
            continue
        message = str(answer.error or "")
        packages = answer.missing_packages or ([answer.missing_package] if answer.missing_package else [])
        if not answer.judged:  # the sandbox could not ask lfx, or ran out of time: no verdict on the code
            unjudged.append(f"{name}: its code could not be loaded here ({message[:200]})")
        elif answer.stale_import:
            errors.append(stale_problem(name, nid, answer.stale_import, answer.stale_name))
        elif answer.inactive_provider:
            provider = answer.inactive_provider
            errors.append(
                FlowProblem(
                    code="bad_value",
                    **at,
                    message=f"{name}'s code lists the model provider {provider}, which lfx 1.13 registers as "
                    f"inactive (its MODELS_METADATA leaves it out): lfx fails loading it with KeyError({provider!r}), "
                    "whatever is installed (code saved by an older Langflow).",
                    fix=f"Replace {name} with a fresh copy of its component.",
                )
            )
        elif packages:
            for package in packages:
                need = package_need(name, nid, "code", package.distribution, package.fix)
                if answer.provider:
                    need.message = (
                        f"{name} lists the model provider(s) {answer.provider}, missing from lfx's registry here "
                        f"(lfx fails with KeyError loading it): it needs {package.distribution}, not installed in "
                        "the sandbox's environment: "
                        f"{package.fix} (then restart the kernel)."
                    )
                needs.append(need)
        else:
            errors.append(
                FlowProblem(
                    code="bad_value",
                    **at,
                    message=f"Langflow cannot build {name}: {message[:500]}",
                    fix="Fix the node's code (validate it with %%assist_validate), or replace the node.",
                )
            )
    return errors, warnings, needs, unjudged


def stale_problem(name: str, nid: str | None, module: str, gone: str | None) -> FlowProblem:
    """A node whose code imports what the installed packages no longer have (a module, or a name
    in a module): code written for another version; lfx cannot load the node."""
    at = {"node": name, "node_id": nid, "field": "code"}
    if gone:
        return FlowProblem(
            code="bad_value",
            **at,
            message=f"{name} imports {gone} from {module}, which does not have it (a wrong import, or code "
            "written for another version of that package); lfx cannot load this node.",
            fix=f"Replace {name} with a fresh copy of its component, or change the import of {gone}.",
        )
    return FlowProblem(
        code="bad_value",
        **at,
        message=f"{name} imports {module}, which does not exist in the installed packages "
        "(code written for another Langflow version); lfx cannot load this node.",
        fix=f"Replace {name} with a fresh copy of its component, or change the import of {module}.",
    )


def retired_problem(name: str, nid: str | None, component: str, message: str) -> FlowProblem:
    """A node of a component lfx retired, reported in lfx's words (they name the migration)."""
    return FlowProblem(
        code="retired",
        node=name,
        node_id=nid,
        field="code",
        message=f"{name} is a {component} node, a component Langflow 1.13 retired; lfx refuses it: {message}",
        fix=f"Migrate {name}'s data as lfx says, then replace the node (a Knowledge Base component) and reconnect "
        "the flow.",
    )


def code_refusal(code: object) -> str | None:
    """Why code may not leave for Langflow: it does not parse, or the security scan refuses it in
    reject mode (the mode generated code is held to), or cannot judge it; None when it passes.
    Remembered by the code's hash: a flow's codes come back with every save and registration."""
    if not isinstance(code, str):
        return f"it is a {type(code).__name__}, not code"
    key = _digest("refusal", code)
    if key not in _REFUSED:
        _remember(_REFUSED, key, _refusal(code))
    return _REFUSED[key]


_REFUSED: dict[bytes, str | None] = {}


def _refusal(code: str) -> str | None:
    from lfassist_jupyter.artifacts.component import MAX_CODE_CHARS
    from lfassist_jupyter.validation.security import ScanLimit
    from lfassist_jupyter.validation.static import security_findings

    if len(code) > MAX_CODE_CHARS:
        return f"it is {len(code):,} characters, more than the scan judges ({MAX_CODE_CHARS:,})"
    problem = code_problem(code)
    if problem is not None:
        return f"it does not parse ({problem})"
    try:
        findings = security_findings(ast.parse(code))
    except ScanLimit as exc:
        return f"the security scan cannot judge it (it gave up after {exc})"
    except (RecursionError, MemoryError) as exc:
        return f"the security scan cannot judge it ({type(exc).__name__})"
    if not findings:
        return None
    line, text = findings[0]
    more = f" and {len(findings) - 1} more" if len(findings) > 1 else ""
    return f"line {line}: {text}{more}"


def _imports_refusal(text: str) -> str | None:
    """Why a module list (the Python Interpreter's ``global_imports``, split as lfx splits it) may
    not leave: a module the deny list refuses, judged as an ``import`` of it."""
    from lfassist_jupyter.artifacts import policy

    for module in (m.strip() for m in text.replace("\n", ",").split(",")):  # a list of modules was joined by lines
        why = policy.why(module) if module else None
        if why:
            return f"it imports `{facts.one_line(module, 80)}` ({why})"
    return None


GATE_SECONDS = 60.0
"""How long the outgoing gate may judge one flow's code (each text's scan is bounded too,
``validation/security.py``): past it, what is left is not judged and the flow does not leave."""


def outgoing_code_problems(flow: object, catalog: Catalog) -> list[FlowProblem]:
    """What of ``flow`` may not leave for Langflow (Save, Register, a run on the server, a real
    run), one problem per field: every text lfx executes when it builds the flow, found as lfx
    finds it (``artifacts/executed.py``: groups opened with their proxies applied, fields of type
    ``code``, lfx's code-execution fields such as Python Function's ``function_code``), must pass
    the scan generated code is held to.  A text one of the catalogue's built-ins carries as its
    class code (the zygote's facts) is lfx's own and not scanned, and so is a node's class code that
    is exactly what a Langflow release shipped for a component of the node's type
    (``Catalog.is_builtin_code``: by SHA-256); what cannot be judged is refused."""
    from lfassist_jupyter.artifacts.executed import Unjudged, executed_fields

    try:
        fields = executed_fields(flow)
    except Unjudged as exc:
        return [
            FlowProblem(
                code="unsafe_code",
                message=f"Its code cannot be judged as lfx would run it: {exc}.",
                fix="Save or register a flow Langflow's editor wrote, or rebuild it with build_flow.",
            )
        ]
    import time

    problems = []
    deadline = time.monotonic() + GATE_SECONDS
    for executed in fields:
        if catalog.is_builtin_code(executed.text, executed.node_type if executed.kind == "class" else None):
            continue
        if time.monotonic() > deadline:
            problems.append(
                FlowProblem(
                    code="unsafe_code",
                    message=f"Its code cannot be judged as lfx would run it: judging it took more than "
                    f"{GATE_SECONDS:g} s (from {executed.where} on, nothing was judged).",
                    fix="A flow carries a few KB of code per custom node; remove what makes it this large.",
                )
            )
            break
        why = _imports_refusal(executed.text) if executed.kind == "imports" else code_refusal(executed.text)
        if why is None:
            continue
        what = "class code" if executed.kind == "class" else "code" if executed.kind == "python" else "module list"
        origin = f" (put there by the group field {executed.via})" if executed.via else ""
        problems.append(
            FlowProblem(
                code="unsafe_code",
                node=executed.node,
                node_id=executed.node_id,
                field=executed.field,
                message=f"the security scan refuses the {what} lfx would run{origin}: {why}.",
                fix="Remove or rewrite that code (validate a component with %%assist_validate), or replace the node.",
            )
        )
    return problems


def outgoing_flow_problem(flow: object, catalog: Catalog) -> str | None:
    """Why ``flow`` may not leave for Langflow (a saved file, a registration), in one line, or None:
    Langflow builds every node from its code, unsandboxed, and a flow file or a server's flow can
    carry any code, so what lfx would execute must pass the scan generated code is held to."""
    problems = outgoing_code_problems(flow, catalog)
    if not problems:
        return None
    first = problems[0]
    where = f"{first.node}.{first.field}: " if first.node and first.field else ""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}{first.message.rstrip('.')}{more}"


def _naming(node: dict[str, Any]) -> dict[str, Any]:
    """What of a node's ``data`` lfx reads to pick the class in its code (``_component_class_name``
    in ``lfx/interface/initialize/loading.py``, applied in the sandbox): its type, the flow
    builder's registry type, the class name in its metadata."""
    data = facts.obj(node.get("data"))
    metadata = facts.frontend_node(node).get("metadata")
    class_name = metadata.get("component_class_name") if isinstance(metadata, dict) else None
    naming: dict[str, Any] = {"type": facts.node_type(node)}
    if isinstance(data.get("_flow_builder_registry_type"), str):
        naming["_flow_builder_registry_type"] = data["_flow_builder_registry_type"]
    if isinstance(class_name, str):
        naming["node"] = {"metadata": {"component_class_name": class_name}}
    return naming


_NOT_BUILT = "Validation did not finish for this node: the sandbox's time for the flow ran out before it."
_NO_SANDBOX = "Validation did not finish for this node: its catalogue has no sandbox to build it in."


def _verdicts(builds: list[NodeCode], sandbox: FlowSandbox | None) -> list[ComponentTemplate]:
    """lfx's verdict on each node code, loaded in ``sandbox`` as lfx loads a
    flow's node (never in this process): whether lfx loads the code and which of ``methods`` it
    lacks.  The sandbox remembers what its lfx judged before and loads the rest each in a child
    of its own (``SandboxValidator.component_verdicts``): a verdict written in a process where only
    its own code ran is the only kind kept for the kernel's life.  A code it had no time for is a
    failure to give a verdict (``ComponentTemplate.judged`` is False), as is every code without
    a sandbox."""
    if not builds:
        return []
    if sandbox is None:
        return [ComponentTemplate.failed(_NO_SANDBOX)] * len(builds)
    answers = sandbox.component_verdicts(builds)
    return [answer if answer is not None else ComponentTemplate.failed(_NOT_BUILT) for answer in answers]
