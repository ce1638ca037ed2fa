"""Approved components as a Langflow extension bundle: the other way into a Langflow.

Registering through ``POST /api/v1/custom_component`` needs a running server and puts a
component into one user's account; a team that deploys Langflow from a requirements file needs
the component as a package. Langflow 1.13 ships components as *extension bundles*: the layout
``lfx extension init`` scaffolds (``extension.json``, ``components/<bundle>/``, ``tests/``,
``pyproject.toml`` with a ``langflow.extensions`` entry point), checked offline by
``lfx extension validate`` and pip-installed into the Langflow server's environment.

``export_extension(DIR, codes, validator=...)`` writes such a bundle: every component is validated
first (static, the security scan in **reject** mode, then the ``ComponentValidator`` given: lfx's
build and the smoke run in the sandbox, as the component pipeline does), and only code that
passed goes in, as it passed, one module
per component, with a small pytest file per component built from the smoke run's own sample
inputs (``ValidationReport.smoke_inputs``): it sets the same values, calls every output the
smoke run called, and checks each returns the class it returned in the sandbox. The manifest
says ``requiresCredentials`` when a component takes a secret.

Kernel side: this module writes files; it never imports lfx or runs a component (the bundle's
tests do, where the user runs them). Every file goes inside ``DIR``. A ``DIR`` that exists must be
empty or a bundle exported here before (``.lfassist-export.json``), whose other components stay:
exporting again adds or updates components, it never deletes one, nor a file of yours.

- **Only its own bytes are overwritten.** The marker records the SHA-256 of every file the export
  wrote; a file that is there and whose bytes differ from that record (you edited the README, the
  folder is your project with its own ``pyproject.toml``, or the marker came from elsewhere and
  names no hash for it) is left as it is, and the export says so in one line
  (``ExportedExtension.not_overwritten``). A component whose module or test is such a file is
  not updated (it is listed in ``kept``).
- **Names are written per format, by one function each**: a name (the bundle's, an input's, an
  output's) is one line first (``one_line``: no line break, control or format character), then a
  Python string literal (``_python_str``), a TOML basic string (``_toml_str``, non-ASCII kept as
  is: TOML has no surrogate escapes), Markdown text with its punctuation escaped
  (``_markdown_text``) or JSON (``json.dumps``). Module and class names are identifiers.
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import os
import re
import stat
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.ports import one_line
from lfassist_jupyter.runtime import blocking_twin

if TYPE_CHECKING:
    from lfassist_jupyter.ports import ComponentValidator
    from lfassist_jupyter.validation.report import SampleInput, ValidationReport

MARKER = ".lfassist-export.json"
"""The file that says a directory is a bundle exported here (and which components it holds)."""

SCHEMA_URL = "https://schemas.langflow.org/extension/v1.json"
_EXTENSION_ID = re.compile(r"^[a-z][a-z0-9-]{1,63}$")  # lfx.extension.manifest's rules
_BUNDLE_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}([a-z]+[0-9]*)?")  # what an export writes, and PEP 440's plain forms
MAX_COMPONENTS = 50
MAX_CODE = 200_000  # the sandbox's own cap on one component's code
MAX_TITLE = 120  # lfx's manifest takes a bundle's display_name of at most 120 characters


@dataclass
class ExportedExtension:
    """What ``export_extension`` wrote: where, under which ids, which components, and which it
    left out (with why)."""

    path: Path
    extension_id: str
    bundle: str
    name: str
    components: list[str] = field(default_factory=list)  # class names written this time
    kept: list[str] = field(default_factory=list)  # components of an earlier export, left as they were
    skipped: list[str] = field(default_factory=list)  # "ClassName: why" (did not validate)
    files: list[Path] = field(default_factory=list)
    not_overwritten: list[str] = field(default_factory=list)  # files of yours (bytes we did not write), as they were

    def lines(self) -> list[str]:
        """What a user reads: what went in, what did not, and how to use the bundle."""
        out = [
            f"Exported {len(self.components)} component(s) to {self.path} as the Langflow extension "
            f"'{self.extension_id}': {', '.join(self.components)}."
        ]
        if self.kept:
            out.append(f"Kept from the earlier export: {', '.join(self.kept)}.")
        out += [f"Not exported (did not validate): {s}" for s in self.skipped]
        if self.not_overwritten:
            out.append(
                f"Not overwritten (their bytes are not what this export wrote; yours are kept): "
                f"{', '.join(self.not_overwritten)}."
            )
        out.append(f"Check it: lfx extension validate {self.path}  ·  its tests: cd {self.path} && pytest")
        out.append(f"Install it into Langflow's environment: pip install {self.path}  (then restart Langflow)")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


# -- names --------------------------------------------------------------------------------------


def extension_id_for(directory: Path) -> str:
    """The manifest id for a bundle in ``directory``, as ``lfx extension init`` derives it."""
    cleaned = re.sub(r"[^a-zA-Z0-9-]+", "-", directory.name).strip("-").lower()
    if len(cleaned) < 2 or not cleaned[0].isalpha():
        cleaned = "my-extension"
    return cleaned[:64].rstrip("-")


def display_name_for(extension_id: str) -> str:
    return " ".join(word.capitalize() for word in extension_id.split("-")) or "My Extension"


def _python_str(text: str) -> str:
    """``text`` as a Python string literal: ``repr`` escapes every line break and quote, so
    whatever a name holds stays one expression on one line (also inside a comment)."""
    return repr(str(text))


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_str(text: str) -> str:
    """``text`` as a TOML basic string: quote, backslash and control characters escaped, every
    other character as it is (``json.dumps`` would write an emoji as a surrogate pair of
    ``\\u`` escapes, which TOML refuses); a lone surrogate, which no file can hold, becomes U+FFFD."""
    out = []
    for ch in str(text):
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def _markdown_text(text: str) -> str:
    """``text`` as literal Markdown on one line: every ASCII punctuation character backslash-escaped
    (CommonMark's rule), so a name makes no link, image, HTML tag, heading or code span."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line(text, MAX_TITLE))


def module_name(class_name: str) -> str:
    """``UppercaseComponent`` -> ``uppercase_component`` (a module name; never a keyword)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name).lower()
    snake = re.sub(r"[^a-z0-9_]+", "_", snake).strip("_") or "component"
    if snake[0].isdigit() or keyword.iskeyword(snake) or snake in ("test", "tests", "components"):
        snake = f"c_{snake}"
    return snake[:60]


def _class_name(report: ValidationReport) -> str:
    name = report.class_name or ""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ConfigError(f"the component's class name {name[:60]!r} is not a Python identifier.")
    return name


# -- what lfx extension validate refuses ---------------------------------------------------------

_IO_NAMES = frozenset({"open", "socket", "subprocess", "exec", "eval", "compile", "__import__"})
_IO_DOTTED = frozenset(
    {
        *(("os", n) for n in ("system", "popen", "execv", "execvp", "execve")),
        *(("subprocess", n) for n in ("run", "Popen", "call", "check_call", "check_output")),
        ("socket", "socket"),
        ("socket", "create_connection"),
        ("importlib", "import_module"),
        ("importlib", "__import__"),
    }
)


def _base_names(node: ast.ClassDef) -> list[str]:
    return [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]


def _has_entry_point(node: ast.ClassDef) -> bool:
    """A ``build`` method, an ``Output(method=...)`` of ``outputs = [...]`` defined in the class
    body, or a derived ``...Component`` base that may supply them (lfx's rule, on the tree)."""
    if any(name != "Component" and name.endswith("Component") for name in _base_names(node)):
        return True
    methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    if "build" in methods:
        return True
    for item in node.body:
        targets: list[ast.expr]
        value: ast.expr | None
        if isinstance(item, ast.Assign):
            targets, value = item.targets, item.value
        elif isinstance(item, ast.AnnAssign):
            targets, value = [item.target], item.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "outputs" for t in targets) or value is None:
            continue
        for call in ast.walk(value):
            callee = getattr(call, "func", None) if isinstance(call, ast.Call) else None
            name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
            if isinstance(call, ast.Call) and name.endswith("Output"):
                for kw in call.keywords:
                    if kw.arg == "method" and isinstance(kw.value, ast.Constant) and kw.value.value in methods:
                        return True
    return False


def _import_time_nodes(stmt: ast.AST) -> Iterator[ast.AST]:
    """Every node of a module-level statement that runs when the module is imported (function and
    class bodies do not: they are not entered at all, as lfx does)."""
    yield stmt
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    for child in ast.iter_child_nodes(stmt):
        yield from _import_time_nodes(child)


def bundle_problem(code: str) -> str | None:
    """What ``lfx extension validate`` (lfx 1.13's pass 3, on the syntax tree) would refuse in this
    module, or None: a top-level ``import *``, an I/O or dynamic-evaluation call that runs on import,
    a ``Component`` class without an entry point (``build``, or an ``Output(method=...)`` it defines:
    a component whose outputs are made at run time has none), or no component class at all. Code
    that validates can still be refused here, so the export checks it (the tests compare with lfx)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return f"it does not parse ({exc})"
    components = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and any(alias.name == "*" for alias in stmt.names):
            return f"line {stmt.lineno}: `from {stmt.module} import *` at module level"
        for node in _import_time_nodes(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in _IO_NAMES:
                return f"line {node.lineno}: `{func.id}(...)` runs when the module is imported"
            dotted = (
                (func.value.id, func.attr)
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                else None
            )
            if dotted in _IO_DOTTED:
                return f"line {node.lineno}: `{dotted[0]}.{dotted[1]}(...)` runs when the module is imported"
        if isinstance(stmt, ast.ClassDef) and any(n.endswith("Component") for n in _base_names(stmt)):
            components.append(stmt)
    if not components:
        return "no class whose base is Component (or ends with Component)"
    for cls in components:
        if not _has_entry_point(cls):
            return (
                f"class {cls.name} has no build() method and no Output(method=...) it defines "
                "(its outputs are made at run time)"
            )
    return None


# -- the bundle's files --------------------------------------------------------------------------


def _manifest(extension_id: str, bundle: str, name: str, credentials: bool, version: str) -> str:
    manifest: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "id": extension_id,
        "version": version,
        "name": name,
        "description": f"Langflow components validated by lfassist-jupyter ({name}).",
        "lfx": {"compat": ["1"]},
        "bundles": [{"name": bundle, "path": f"components/{bundle}", "display_name": name, "icon": "Package"}],
    }
    if credentials:
        manifest["capabilities"] = {"requiresCredentials": True}
    return json.dumps(manifest, indent=2) + "\n"


def _pyproject(extension_id: str, bundle: str, name: str, version: str) -> str:
    return f"""\
[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = {_toml_str(f"lfx-{extension_id}")}
version = {_toml_str(version)}
description = {_toml_str(f"{name} -- a Langflow Extension (components validated by lfassist-jupyter).")}
requires-python = ">=3.10"
dependencies = []

[tool.setuptools]
package-dir = {{"" = "."}}

[tool.setuptools.packages.find]
where = ["."]
include = ["components*"]

[tool.setuptools.package-data]
"*" = ["extension.json"]

[tool.langflow.extension]
manifest = "extension.json"

[project.entry-points."langflow.extensions"]
{bundle} = "components.{bundle}"
"""


def _readme(extension_id: str, bundle: str, name: str, modules: dict[str, str]) -> str:
    listing = "\n".join(f"- `{cls}` (`components/{bundle}/{mod}.py`)" for cls, mod in sorted(modules.items()))
    title = _markdown_text(name)
    return f"""\
# {title}

Langflow components generated and validated by lfassist-jupyter (the Langflow Assistant inside Jupyter),
as a Langflow Extension in the layout `lfx extension init` makes. Each component's code is
exactly what passed validation: lfx built it, a sandbox called every output with sample inputs,
and the security scan found nothing to refuse.

{listing}

## Check it

```bash
lfx extension validate .     # the manifest and the bundle, offline
pytest                       # each component's test (needs lfx: pip install lfx, or Langflow)
```

Each `tests/test_<component>.py` repeats the validation's smoke run: the same sample inputs, every
output called, each returning what it returned in the sandbox.

## Install it into Langflow

Into the environment Langflow runs in (the bundle's `langflow.extensions` entry point registers it):

```bash
pip install .                # or: uv pip install .   then restart Langflow
```

The components appear in Langflow's sidebar under **{title}**. To deploy Langflow from a
requirements file, add the built wheel (`pip wheel . -w dist/`) or the folder
(`lfx-{extension_id} @ file:///path/to/{extension_id}`) to it. While developing,
`lfx extension dev .` starts a Langflow with the bundle loaded and reloads it on change.
"""


_GITIGNORE = "__pycache__/\n*.py[cod]\n.venv/\nbuild/\ndist/\n*.egg-info/\n.pytest_cache/\n"


def _literal(sample: SampleInput) -> str | None:
    """Python source for one sample value, or None when it cannot be written (left at its default)."""
    if sample.kind == "Message":
        return f"Message(text={_python_str(sample.text or '')})"
    if sample.kind == "Data":
        return f"Data(data={sample.data or {}!r})"
    if sample.kind == "DataFrame":
        return f"DataFrame({sample.rows or []!r})"
    if sample.kind == "file":
        return f"_file(tmp_path, {_python_str(sample.text or '')})"
    if sample.kind == "value":
        return repr(sample.value) if _plain(sample.value) else None
    if sample.kind == "list" and sample.items:
        parts = [_literal(item) for item in sample.items]
        return None if any(p is None for p in parts) else "[" + ", ".join(p for p in parts if p) + "]"
    return None


def _plain(value: object, depth: int = 0) -> bool:
    """JSON data whose ``repr`` is a Python literal of the same value (no NaN, no depth bomb)."""
    if depth > 20:
        return False
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _test_source(class_name: str, bundle: str, module: str, report: ValidationReport) -> str:
    """The pytest file of one component: it builds, and (when the smoke run called its outputs)
    the smoke run again, outside the sandbox."""
    inputs, left = [], []
    for input_name, sample in report.smoke_inputs.items():
        literal = _literal(sample)
        if literal is None:
            left.append(input_name)
        else:
            inputs.append(f"        {_python_str(input_name)}: {literal},")
    smoke_run = [
        (name, call.method, call.returned or f"raised {call.raised}") for name, call in report.smoke_outputs.items()
    ]
    declared = [o.name for o in report.outputs]
    uses = {kind for kind in ("Message", "Data", "DataFrame") if any(f"{kind}(" in line for line in inputs)}
    imports = [
        f"from lfx.schema.{mod} import {kind}"
        for kind, mod in (("Data", "data"), ("DataFrame", "dataframe"), ("Message", "message"))
        if kind in uses
    ]
    skip = None
    if report.smoke != "passed":
        skip = report.smoke_reason or f"the validation's smoke run {report.smoke.replace('_', ' ')}"
    notes = []
    if left:
        names = ", ".join(_python_str(name) for name in left)
        notes.append(f"# Left at their defaults (their sample could not be written here): {names}.")
    body = [
        f'"""{class_name}: built, then its outputs called with the sample inputs the validation sandbox',
        "used (its smoke run). Generated by lfassist-jupyter; run with ``pytest`` from the extension root.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import asyncio",
        "import inspect",
        "from pathlib import Path",
        "",
        *(["import pytest"] if skip else []),
        *imports,
        "",
        f"from components.{bundle}.{module} import {class_name}",
        "",
        "",
        "def _file(folder: Path, text: str) -> str:",
        '    path = folder / "sample.txt"',
        '    path.write_text(text, encoding="utf-8")',
        "    return str(path)",
        "",
        "",
        "def sample_inputs(tmp_path: Path) -> dict:",
        '    """The inputs the smoke run set."""',
        "    return {",
        *inputs,
        "    }",
        "",
        "",
        "def outcome(component: object, method: str) -> str:",
        '    """What an output did, as the smoke run recorded it: the class it returned, or what it raised',
        '    (awaited when it is async, as Langflow calls it)."""',
        "    try:",
        "        result = getattr(component, method)()",
        "        result = asyncio.run(result) if inspect.iscoroutine(result) else result",
        "    except Exception as exc:",
        '        return f"raised {type(exc).__name__}"',
        "    return type(result).__name__",
        "",
        "",
        "# (output, method, what it did): the smoke run's calls in its order; an output may raise on",
        "# sample data, and a later one may depend on what an earlier call changed.",
        "SMOKE_RUN = [",
        *[f"    ({_python_str(o)}, {_python_str(m)}, {_python_str(d)})," for o, m, d in smoke_run],
        "]",
        "",
        "",
        f"def test_{module}_builds() -> None:",
        f"    component = {class_name}()",
        f"    assert [output.name for output in component.outputs] == [{', '.join(map(_python_str, declared))}]",
        "",
        "",
        *([f"@pytest.mark.skip(reason={_python_str(skip)})"] if skip else []),
        *notes,
        f"def test_{module}_outputs_on_the_smoke_inputs(tmp_path: Path) -> None:",
        f"    component = {class_name}(**sample_inputs(tmp_path))",
    ]
    body += [
        "    did = [(output, method, outcome(component, method)) for output, method, _ in SMOKE_RUN]",
        "    assert did == SMOKE_RUN",
    ]
    return "\n".join(body) + "\n"


# -- writing ---------------------------------------------------------------------------------------


def _prepare(target: Path) -> dict[str, Any]:
    """The directory's earlier export (its marker), ``{}`` for a new or empty one; ``ConfigError``
    for anything else (a file, a folder of other things)."""
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} exists and is not a directory: choose a new directory for the extension.")
    marker = target / MARKER
    if marker.is_file() and not marker.is_symlink():
        try:
            earlier = json.loads(marker.read_text(encoding="utf-8")[:1_000_000])
        except (OSError, ValueError):
            earlier = None
        if isinstance(earlier, dict) and isinstance(earlier.get("components"), dict):
            return earlier
    if target.is_dir() and any(target.iterdir()):
        raise ConfigError(
            f"{target} is not empty and was not exported here before: choose a new directory "
            "(an export never writes over files it did not write)."
        )
    return {}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _current_digest(path: Path) -> str | None:
    """The SHA-256 of the regular file at ``path`` (never followed if a link), or None when
    nothing is there; ``"other"`` for something that is not a regular file (a folder, a FIFO)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return "other"
    digest = hashlib.sha256()
    with open(path, "rb") as fh:  # a regular file: reading it cannot block
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _Owned:
    """The files of one export: those it may overwrite (their bytes are what the earlier export
    wrote, by the marker's hashes) and those it leaves (anything else that is already there)."""

    def __init__(self, root: Path, earlier: dict[str, Any]) -> None:
        self.root = root
        before = earlier.get("files")
        self.before: dict[str, str] = (
            {str(k): str(v) for k, v in before.items() if isinstance(v, str)} if isinstance(before, dict) else {}
        )
        self.hashes: dict[str, str] = {}  # what the new marker records
        self.written: list[Path] = []
        self.left: list[str] = []

    def relative(self, path: Path) -> str:
        if path.is_symlink() or not path.resolve().is_relative_to(self.root.resolve()):
            raise ConfigError(f"{path} is a link or leaves {self.root}: not written.")
        return path.relative_to(self.root).as_posix()

    def may_write(self, path: Path, text: str) -> bool:
        """Whether ``path`` is new, ours (its bytes hash as the marker says), or already ``text``."""
        rel = self.relative(path)
        current = _current_digest(path)
        return current is None or current in (self.before.get(rel), _digest(text.encode("utf-8")))

    def write(self, path: Path, text: str) -> bool:
        """Write ``text`` at ``path`` when it may (``may_write``); else leave the file and note it."""
        if not self.may_write(path, text):
            self.left.append(self.relative(path))
            return False
        data = text.encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.hashes[self.relative(path)] = _digest(data)
        self.written.append(path)
        return True

    def kept_hashes(self) -> dict[str, str]:
        """The new marker's record: what was written now, and the earlier files still as written."""
        out = dict(self.hashes)
        for rel, digest in self.before.items():
            path = self.root / rel
            inside = not path.is_symlink() and path.resolve().is_relative_to(self.root.resolve())
            if rel not in out and inside and _current_digest(path) == digest:
                out[rel] = digest
        return dict(sorted(out.items()))


def write_extension(
    target: str | Path, components: list[tuple[str, ValidationReport]], *, name: str | None = None
) -> ExportedExtension:
    """Write ``components`` (code and the report that validated it) as an extension bundle in
    ``target``. Only valid reports are accepted (``ConfigError`` otherwise): ``export_extension``
    is the door that validates first. A file already there is overwritten only when its bytes are
    what the earlier export wrote (``_Owned``)."""
    root = Path(target).expanduser()
    earlier = _prepare(root)
    extension_id = str(earlier.get("id") or "") or extension_id_for(root.resolve())
    if not _EXTENSION_ID.match(extension_id):
        extension_id = extension_id_for(root.resolve())
    bundle = extension_id.replace("-", "_") if _BUNDLE_NAME.match(extension_id.replace("-", "_")) else "my_bundle"
    # The name (the caller's, or an earlier marker's from a shared or cloned folder) goes into
    # JSON, TOML and Markdown: one line first, then each format's own escaping.
    title = one_line(name or str(earlier.get("name") or "") or display_name_for(extension_id), MAX_TITLE)
    title = title or display_name_for(extension_id)
    version = str(earlier.get("version") or "")
    if not _VERSION.fullmatch(version):
        version = "0.1.0"
    modules: dict[str, str] = (
        {str(k): str(v) for k, v in earlier["components"].items() if isinstance(v, str) and re.fullmatch(r"\w+", v)}
        if earlier
        else {}
    )
    result = ExportedExtension(path=root.resolve(), extension_id=extension_id, bundle=bundle, name=title)
    root.mkdir(parents=True, exist_ok=True)
    owned = _Owned(root, earlier)
    credentials = bool(earlier.get("requires_credentials"))
    for code, report in components:
        if not report.is_valid:
            raise ConfigError(f"{report.class_name or 'a component'} did not validate: it is not exported.")
        cls = _class_name(report)
        module = modules.get(cls) or module_name(cls)
        taken = {m for c, m in modules.items() if c != cls}
        while module in taken:
            module = f"{module}_2"
        files = {
            root / "components" / bundle / f"{module}.py": code if code.endswith("\n") else code + "\n",
            root / "tests" / f"test_{module}.py": _test_source(cls, bundle, module, report),
        }
        theirs = [owned.relative(path) for path, text in files.items() if not owned.may_write(path, text)]
        if theirs:  # a component is updated whole, or not at all
            owned.left += theirs
            if cls not in modules:
                result.skipped.append(f"{cls}: not written, {', '.join(theirs)} is there and is not this export's")
            continue  # an earlier export's component stays as you left it: kept
        modules[cls] = module
        credentials = credentials or any("Secret" in (i.type or "") for i in report.inputs)
        for path, text in files.items():
            owned.write(path, text)
        result.components.append(cls)
    result.kept = sorted(c for c in modules if c not in result.components)
    owned.write(root / "components" / bundle / "__init__.py", "")
    owned.write(root / "tests" / "__init__.py", "")
    owned.write(root / "extension.json", _manifest(extension_id, bundle, title, credentials, version))
    owned.write(root / "pyproject.toml", _pyproject(extension_id, bundle, title, version))
    owned.write(root / "README.md", _readme(extension_id, bundle, title, modules))
    owned.write(root / ".gitignore", _GITIGNORE)
    marker = {
        "generator": "lfassist-jupyter",
        "id": extension_id,
        "name": title,
        "version": version,
        "requires_credentials": credentials,
        "components": dict(sorted(modules.items())),
        "files": owned.kept_hashes(),
    }
    marker_path = root / MARKER
    owned.relative(marker_path)  # never through a link
    marker_path.write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    result.files = [*owned.written, marker_path]
    result.not_overwritten = list(dict.fromkeys(owned.left))
    return result


async def aexport_extension(
    target: str | Path,
    codes: list[str],
    *,
    name: str | None = None,
    validator: ComponentValidator,
) -> ExportedExtension:
    """Validate each of ``codes`` (static, security scan in reject mode, then ``validator``: lfx's
    build and smoke run in the sandbox) and write those that pass as an extension bundle in
    ``target``; the others are listed in ``skipped`` with why. ``ConfigError`` when none passes or
    ``target`` cannot hold it."""
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise ConfigError("give the components to export as a non-empty list of code strings.")
    if len(codes) > MAX_COMPONENTS or any(len(c) > MAX_CODE for c in codes):
        raise ConfigError(f"an export takes at most {MAX_COMPONENTS} components of at most {MAX_CODE // 1000} KB each.")
    _prepare(Path(target).expanduser())  # a bad target fails before any validation
    passed: list[tuple[str, ValidationReport]] = []
    skipped: list[str] = []
    for code in codes:
        report = await _validated(code, validator)
        problem = bundle_problem(code) if report.is_valid else None
        if report.is_valid and problem is None:
            passed.append((code, report))
        elif problem is not None:
            skipped.append(f"{report.class_name}: `lfx extension validate` refuses it: {problem}")
        else:
            skipped.append(f"{report.class_name or 'a component'}: {textwrap.shorten(report.error or '', 200)}")
    if not passed:
        raise ConfigError("no component passed validation, so nothing was exported: " + "; ".join(skipped))
    result = write_extension(target, passed, name=name)
    result.skipped = [*skipped, *result.skipped]
    return result


async def _validated(code: str, validator: ComponentValidator) -> ValidationReport:
    """The report generated code gets: the static phase with the security scan in reject mode (off
    the event loop), then the validator's runtime and smoke phases when that passed."""
    import asyncio

    from lfassist_jupyter.validation.static import validate_static

    static = await asyncio.to_thread(validate_static, code, security="reject")
    if not static.is_valid:
        return static
    report = await validator.avalidate(code)
    report.class_name = report.class_name or static.class_name
    return report


export_extension = blocking_twin(aexport_extension)
