"""A real run of a flow on this machine: the user's explicit choice, with only the keys and hosts
the user allowed.

The probe run (``sandbox.probe``) proves the wiring with models stubbed, no keys and no network.
A real run calls the models, so it needs keys and the network -- and a flow file may come from
anyone, so neither is the flow's to decide:

- **Keys.** Only a key field (``password=True``, or a ``SecretStrInput``) can name a variable;
  ``load_from_db`` on any other field is dropped (a hidden text field naming ``GITHUB_TOKEN``
  gets the text ``GITHUB_TOKEN``).  A key field whose value is an UPPER_SNAKE name
  (``M.api_key: <VARIABLE>`` in a spec) names that variable.  ``run_plan(flow)`` says which
  variables the flow wants and which hosts it would reach, before anything runs; the run gets
  only the wanted variables the user allowed (``env=``), nothing else of the kernel's environment.
- **Network.** Under bubblewrap the run has a network namespace of its own (loopback only); its
  one way out is the kernel-side egress proxy (``sandbox/egress.py``) on a Unix socket, which
  allows the hosts of the flow's model providers (and the servers their base-URL variables name:
  the provider table, ``providers/table.py``, says which) plus the user's ``allow_hosts`` (a
  host without a port: its default ports 80 and 443 only; the kernel's own ports only when named
  with their port), and refuses loopback, private and
  link-local addresses unless the user named them.  Refused connections come back in the result.

It never runs in the user's kernel: ``sandbox/local_run.py`` hands it to the warm real runner, a
process under bubblewrap where available that forks a confined child per run (no view of the
user's files, a bounded scratch space as HOME and /tmp, nothing surviving the run), and what
comes back is capped and has the passed keys redacted (also
reversed, split, recased, rot13'd, hex or base64), like everything else that comes out of a generated component.
A run that was given a key can still send it to an allowed host: allow a key only to a flow you
trust with it.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import VARIABLE_REF, is_key_field, name_variable  # the worker's build's too
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.providers import table
from lfassist_jupyter.sandbox.local_run import RunPlan, run
from lfassist_jupyter.settings import NO_KEY

__all__ = ["VARIABLE_REF", "RunPlan", "is_key_field", "name_variable", "run_flow_for_real", "run_plan"]

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import RealRun
    from lfassist_jupyter.sandbox.egress import Allowed

    from .catalog import Catalog

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_URL_FIELD = re.compile(r"(^|_)(base_url|api_base|api_url|url|host|endpoint)$")


def _nodes(flow: dict[str, Any]) -> list[tuple[dict[str, Any], str, str, dict[str, Any]]]:
    """``(node, name, id, template fields)`` for every node."""
    return [(n, facts.node_name(n), facts.node_id(n), facts.fields(n)) for n in facts.nodes(flow)]


def prepare_flow(flow: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``flow`` where only key fields read variables, and the fields ignored doing so.

    A key field holding an UPPER_SNAKE name (``M.api_key: <VARIABLE>`` in a spec) reads that
    variable (``load_from_db``, as Langflow does for a global variable); ``load_from_db`` on any
    other field is turned off, so its value is plain text and no variable is read for it."""
    flow = copy.deepcopy(flow)
    ignored = []
    for _, name, _, template in _nodes(flow):
        for fname, fld in template.items():
            if not isinstance(fld, dict):
                continue
            value = fld.get("value")
            if is_key_field(fld):
                name_variable(fld)
            elif fld.get("load_from_db"):
                fld["load_from_db"] = False
                if isinstance(value, str) and value.strip():
                    ignored.append(f"{name}.{fname} names {value.strip()!r} but is not a key field: not read")
    return flow, ignored


def flow_variables(flow: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(variable, node, node id, field)`` for every key field that reads a variable: what a
    real run may be given. A key typed into the flow by hand needs nothing; a non-key field
    never reads one (see ``prepare_flow``)."""
    found = []
    for _, name, nid, template in _nodes(flow):
        for fname, fld in template.items():
            if isinstance(fld, dict) and is_key_field(fld) and fld.get("load_from_db"):
                value = fld.get("value")
                if isinstance(value, str) and value.strip():
                    found.append((value.strip(), name, nid, fname))
    return found


def _providers(flow: dict[str, Any]) -> list[tuple[str, str]]:
    """``(provider, node)`` for each model node: the model field's provider, an override, the type
    (the provider table's ``components``)."""
    found: list[tuple[str, str]] = []
    for node, name, _, template in _nodes(flow):
        names = set()
        model = template.get("model")
        if isinstance(model, dict) and isinstance(model.get("value"), list):
            names |= {str(m.get("provider")) for m in model["value"] if isinstance(m, dict) and m.get("provider")}
        override = template.get("provider")
        if isinstance(override, dict) and isinstance(override.get("value"), str) and override["value"].strip():
            names.add(override["value"].strip())
        kind = table.for_component(str(facts.node_type(node)))
        if kind:
            names.add(kind.name)
        found += [(n.lower(), name) for n in sorted(names)]
    return found


def _allowed_names(env: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """``env`` as the user's allowed variables: a mapping as given, names taken from this environment."""
    if env is None:
        return {}
    if isinstance(env, Mapping):
        return {str(k): str(v) for k, v in env.items() if v is not None}
    if isinstance(env, (str, bytes)):
        env = [n.strip() for n in str(env).split(",")]
    if not isinstance(env, Iterable):
        raise ConfigError(f"env must be a dict of variables or a list of names, not {type(env).__name__}.")
    names = [str(n).strip() for n in env if str(n).strip()]
    return {n: os.environ.get(n, "") for n in names}


def _setting(name: str, given: Mapping[str, str]) -> str:
    """A variable as the run would have it: allowed by the user, else this environment's."""
    return given.get(name) or os.environ.get(name, "")


def _keyless(name: str, given: Mapping[str, str]) -> table.ProviderSpec | None:
    """The provider whose key ``name`` is, when it runs keyless: a server of the user's configured
    (its base-URL variable) and no key anywhere.  The assistant talks to it with a stand-in key
    (``settings.NO_KEY``), so a flow written for it runs the same way, with nothing to allow (the
    stand-in is no secret)."""
    spec = next((p for p in table.PROVIDERS if p.key_variable == name and p.needs == "key_or_url"), None)
    if spec is None or os.environ.get(name) or name in given:
        return None
    return spec if any(_setting(v, given) for v in spec.base_url_variables) else None


def run_plan(
    flow: dict[str, Any] | str | Path,
    *,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | Iterable[str] | None = None,
    allow_hosts: Iterable[str] = (),
) -> RunPlan:
    """Which variables a real run of ``flow`` wants and which hosts it may reach -- nothing runs.

    ``env`` and ``allow_hosts`` as for ``run_flow_for_real``: the plan says which wanted variables are
    still not allowed (``plan.missing``).  Print it (``print(run_plan(flow))``) to see it.  Spec
    text is built over ``catalog`` first (flow JSON and files need none)."""
    from .validate import _load

    loaded, errors, _ = _load(flow, catalog)
    if loaded is None:
        raise ConfigError(f"Not run: {errors[0] if errors else 'no flow'}")
    prepared, ignored = prepare_flow(loaded)
    return _plan(prepared, ignored, env, allow_hosts)


def _plan(
    flow: dict[str, Any],
    ignored: list[str],
    env: Mapping[str, str] | Iterable[str] | None,
    allow_hosts: Iterable[str],
) -> RunPlan:
    from lfassist_jupyter.sandbox.egress import Allowed, parse_host

    if isinstance(allow_hosts, str):
        allow_hosts = [allow_hosts]
    given = _allowed_names(env)
    plan = RunPlan(notes=list(ignored))
    for name, node, _, fname in flow_variables(flow):
        if not _ENV_NAME.match(name):
            raise ConfigError(f"Not run: {node}.{fname} reads {name!r}, which is not a variable name.")
        if (name, f"{node}.{fname}") not in plan.variables:
            plan.variables.append((name, f"{node}.{fname}"))
        keyless = None if given.get(name) else _keyless(name, given)
        if given.get(name):
            plan.allowed[name] = given[name]
        elif keyless is not None:
            plan.allowed[name] = NO_KEY
            note = (
                f"{name}: none is set; the run gives {node} the stand-in key the assistant uses for "
                f"{keyless.base_url_variable}"
            )
            if note not in plan.notes:
                plan.notes.append(note)
        elif f"{name} ({node}.{fname})" not in plan.missing:
            plan.missing.append(f"{name} ({node}.{fname})" + (" -- allowed but not set" if name in given else ""))
    hosts: list[Allowed] = []

    def add(entry: Allowed) -> None:
        if not any(h.host == entry.host and h.port == entry.port for h in hosts):
            hosts.append(entry)

    for provider, node in _providers(flow):
        spec = table.find(provider)
        for host in spec.hosts if spec else ():
            add(Allowed(host, 443, False, f"{provider} for {node}", named=False))
        configured = _configured_server(spec, given) if spec else None
        if spec is not None and configured is not None:
            setting, setting_value = configured
            try:
                entries, run_value = _configured_hosts(spec, setting, setting_value)
            except ValueError:
                plan.notes.append(f"{setting} is not a URL: {setting_value!r}")
            else:
                plan.config[setting] = run_value
                lfx_variable = spec.flow.base_url_variable if spec.flow else None
                if lfx_variable and lfx_variable != setting:  # what lfx reads when the node has no URL
                    plan.config[lfx_variable] = run_value
                for entry in entries:
                    add(entry)
        if not (spec and spec.hosts) and configured is None:
            hint = ""
            if spec and spec.url_form == "ollama":
                hint = f" (a local {spec.display_name}: --allow-host 127.0.0.1:{table.ollama_host('')[2]})"
            plan.notes.append(f"{node} uses {provider}: no known host; allow it with allow_hosts / --allow-host{hint}")
    for _node, name, _, template in _nodes(flow):
        for fname, fld in template.items():
            value = fld.get("value") if isinstance(fld, dict) else None
            if isinstance(value, str) and "://" in value and _URL_FIELD.search(fname):
                with contextlib.suppress(ValueError):
                    host, port = parse_host(value)
                    if not any(h.matches(host, port or 443) for h in hosts):
                        plan.notes.append(f"{name}.{fname} names {host}, which is not allowed unless you add it")
    for wanted in allow_hosts:
        try:
            host, port = parse_host(wanted)
        except ValueError as exc:
            raise ConfigError(f"allow_hosts: {exc}") from exc
        add(Allowed(host, port, True, "you"))
    plan.hosts = hosts
    plan.kernel_ports = kernel_ports()
    return plan


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _configured_server(spec: table.ProviderSpec, given: Mapping[str, str]) -> tuple[str, str] | None:
    """``(variable, value)`` of the provider's configured server (its first base-URL variable set,
    allowed by the user or in this environment), or None."""
    for variable in spec.base_url_variables:
        value = _setting(variable, given)
        if value:
            return variable, value
    return None


def _means_this_machine(host: str) -> bool:
    """Whether a client connecting to ``host`` reaches this machine's loopback (0.0.0.0 and :: do)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def _configured_hosts(spec: table.ProviderSpec, setting: str, value: str) -> tuple[list[Allowed], str]:
    """The allow-list entries a configured server (a provider's base-URL variable) opens, and the
    value the run is given for it; its port counts as named only when written out.

    An ``ollama``-form variable is read as Ollama reads ``OLLAMA_HOST``, and a server on this
    machine (``0.0.0.0``, ``::``, ``localhost``: how an Ollama server is usually set) is its
    loopback names at that port; the run is given ``127.0.0.1``."""
    from urllib.parse import urlsplit

    from lfassist_jupyter.sandbox.egress import Allowed, parse_host

    if spec.url_form != "ollama":
        url = value if "://" in value else f"http://{value}"
        host, port = parse_host(url)
        return [Allowed(host, port, True, setting, named=urlsplit(url).port is not None)], value
    scheme, host, port = table.ollama_host(value)
    named = bool(re.search(r":\d+(/|$)", value.strip().strip("\"'").strip().split("://", 1)[-1]))
    names = [host]
    if _means_this_machine(host):
        names = [*_LOOPBACK_NAMES, *([host] if host not in _LOOPBACK_NAMES else [])]
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return [Allowed(name, port, True, setting, named=named) for name in names], f"{scheme}://{shown}:{port}"


def kernel_ports() -> frozenset[int]:
    """The ports of the Jupyter kernel this code runs in, from its connection file (none outside a
    kernel): a real run reaches them only when a user names one with its port."""
    import json
    import sys

    kernelapp = sys.modules.get("ipykernel.kernelapp")
    if kernelapp is None or not kernelapp.IPKernelApp.initialized():
        return frozenset()
    try:
        from ipykernel.connect import get_connection_file

        with open(get_connection_file(), "rb") as fh:
            info = json.loads(fh.read(65_536))
        ports = {info.get(f"{name}_port") for name in ("shell", "iopub", "stdin", "control", "hb")}
    except Exception:  # no file (an embedded kernel): the app knows its ports too
        app = kernelapp.IPKernelApp.instance()
        ports = {getattr(app, f"{name}_port", None) for name in ("shell", "iopub", "stdin", "control", "hb")}
    return frozenset(p for p in ports if isinstance(p, int) and 0 < p < 65536)


def run_flow_for_real(
    flow: dict[str, Any] | str | Path,
    input_text: str = "",
    *,
    catalog: Catalog,
    env: Mapping[str, str] | Iterable[str] | None = None,
    allow_hosts: Iterable[str] = (),
    timeout: float = 300.0,
) -> RealRun:
    """The **real run**: run ``flow`` on ``input_text`` with its models called, using the keys you allowed.

    This is not the probe run every flow the assistant builds gets (``SandboxValidator.probe_run``,
    or ``%%assist_flow --run``: models stubbed, no keys, no network); it is the step you take when
    the flow is ready for real input.

    ``flow`` is flow JSON, a ``.json`` file or spec text.  ``env`` is what you allow: a dict of
    variables, or a list of names taken from this environment (``env=["<KEY_VARIABLE>"]``); the
    run gets only the allowed variables that the flow's key fields name.  A wanted variable you
    did not allow is a ``ConfigError`` naming it -- ``run_plan(flow)`` shows them first, with the
    hosts it may reach: its model providers' and ``allow_hosts`` (``"host"``, ``"host:port"`` or
    a URL; a local or private address only when you name it).  Returns a ``RealRun``: the probe
    run's fields (``ok``, ``text``, ``error``, ``seconds``) plus ``component``, ``variables`` (the
    names passed, never their values), ``hosts`` (the allow-list), ``refused`` (the connections
    the fence refused: host, port, reason, after_s) and ``isolation``.  A failing flow is
    reported, not raised.  It is checked over ``catalog`` first, in its sandbox
    (``lfassist_jupyter.run_flow_for_real`` is this over the shared sandbox's catalogue).
    """
    from .packages import install_line
    from .validate import _load, validate_flow

    if not isinstance(input_text, str):
        raise ConfigError(f"The input must be text, not {type(input_text).__name__}.")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}.")
    loaded, errors, _ = _load(flow, catalog)
    if loaded is None:
        raise ConfigError(f"Not run: {errors[0] if errors else 'no flow'}")
    loaded, ignored = prepare_flow(loaded)
    report = validate_flow(loaded, catalog=catalog)
    problems = [*errors, *report.errors]  # what the builder dropped (an unknown component) counts too
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"Not run: the flow has errors: {problems[0]}{more}")

    if report.missing_packages:
        lines = "; ".join(f"{p.distribution} ({', '.join(p.nodes)})" for p in report.missing_packages)
        names = [p.distribution for p in report.missing_packages]
        install = install_line(names, catalog.sandbox.python if catalog.sandbox is not None else None)
        raise ConfigError(f"Not run: the flow needs packages not installed here: {lines}. Install them: {install}")
    read_fields = {(nid, fname) for _, _, nid, fname in flow_variables(loaded)}
    unset = [
        f"{n.node}.{n.field} ({n.kind})"
        for n in report.needs
        if n.kind == "model" or (n.kind == "secret" and (n.node_id, n.field) not in read_fields)
    ]
    if unset:
        example = table.PROVIDERS[0].key_variable
        raise ConfigError(
            f"Not run: the flow still needs {', '.join(unset)}. Choose them in the spec's config "
            f"(or in Langflow) first; a key can name a variable, e.g. `M.api_key: {example}`."
        )
    plan = _plan(loaded, ignored, env, allow_hosts)
    if plan.missing:
        names = sorted({m.split(" ")[0] for m in plan.missing})
        raise ConfigError(
            f"Not run: the flow wants {', '.join(plan.missing)}; allow it with env={names!r} "
            "(from your environment) or env={...} (run_plan(flow) shows what it wants and reaches)."
        )
    return run(loaded, input_text, plan, timeout)
