"""Record the code of Langflow's own components as its releases shipped them: ``lfassist_jupyter/flows/
builtin_codes.json``, the facts ``Catalog.is_builtin_code`` reads.

A flow saved by Langflow 1.0-1.12 carries each built-in node's code as that release shipped it (the
component's module source, byte for byte).  The sandbox's lfx knows only its own release's code, so
an older File component's code (``import subprocess``) looked like custom code to the gate and was
refused.  This script downloads every released wheel of ``lfx`` and ``langflow-base`` (pip, no
dependencies, from the package index), hashes each module under ``components/`` (SHA-256 of its
text, as a node's ``code`` value holds it) and records, per hash, the component types the module
defines (each class's name and its ``name`` attribute: what a node's ``type`` says).

A module is left out (so its code stays scanned as custom code) when it runs other text: it calls
``exec``, ``eval``, ``compile`` or ``__import__``, or defines one of lfx's code-execution components
(``artifacts.executed.CODE_EXECUTION_COMPONENT_TYPES``).  Only identity is recorded: the gate still
scans every code-execution field of such a node, whatever its code.

Usage::

    python benchmarks/builtin_codes.py [--keep-wheels]

The wheels go to ``~/.cache/lfassist-jupyter/builtin-wheels`` (removed once hashed unless kept);
``tests/flows/test_builtin_identity.py`` holds the current lfx's code against the file.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lfassist_jupyter.artifacts.executed import CODE_EXECUTION_COMPONENT_TYPES  # noqa: E402 - the repo's own facts

OUT = ROOT / "lfassist_jupyter" / "flows" / "builtin_codes.json"
WHEELS = Path.home() / ".cache" / "lfassist-jupyter" / "builtin-wheels"
# Langflow 1.0.19 (langflow-base 0.0.97) to 1.11, and lfx from its first release (Langflow 1.6) on.
RELEASES = {
    "langflow-base": [
        *(f"0.0.{n}" for n in range(97, 100)),
        *("0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.1.4", "0.1.4.post1", "0.2.0"),
        *(f"0.3.{n}" for n in range(5)),
        *(f"0.4.{n}" for n in range(4)),
        *("0.5.0", "0.5.0.post1", "0.5.0.post2", "0.5.1"),
        *(f"0.6.{n}" for n in range(10)),
        *(f"0.7.{n}" for n in range(1, 4)),
        *(f"0.8.{n}" for n in range(5)),
        *(f"0.9.{n}" for n in range(7)),
        *(f"0.10.{n}" for n in range(4)),
        *(f"0.11.{n}" for n in range(7)),
    ],
    "lfx": [
        *(f"0.1.{n}" for n in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13)),
        *("0.2.1", "0.2.2"),
        *(f"0.3.{n}" for n in range(5)),
        *(f"0.4.{n}" for n in range(7)),
        *(f"1.10.{n}" for n in range(4)),
        *(f"1.11.{n}" for n in range(7)),
        *(f"1.12.{n}" for n in range(9)),
    ],
}
_RUNS_TEXT = {"exec", "eval", "compile", "__import__"}


def component_types(source: str) -> set[str] | None:
    """The component types a module defines (class names and their ``name`` attributes); None when
    it runs other text (see the module docstring), defines no class or does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    types: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _RUNS_TEXT:
            return None
        if isinstance(node, ast.ClassDef):
            types.add(node.name)
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "name" for t in item.targets)
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                ):
                    types.add(item.value.value)
    if types & CODE_EXECUTION_COMPONENT_TYPES:
        return None
    return types or None


def wheel(dist: str, version: str) -> Path:
    stem = dist.replace("-", "_")
    found = list(WHEELS.glob(f"{stem}-{version}-*.whl"))
    if not found:
        pip = shutil.which("pip3") or shutil.which("pip") or "pip"
        subprocess.run([pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", f"{dist}=={version}",
                        "-d", str(WHEELS)], check=True, timeout=900)  # fmt: skip
        found = list(WHEELS.glob(f"{stem}-{version}-*.whl"))
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep-wheels", action="store_true")
    args = parser.parse_args()
    WHEELS.mkdir(parents=True, exist_ok=True)
    codes: dict[str, set[str]] = {}
    left_out = 0  # modules that run other text (or define a code-execution component)
    for dist, versions in RELEASES.items():
        for version in versions:
            path = wheel(dist, version)
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    if not (re.search(r"^(lfx|langflow)/components/", name) and name.endswith(".py")):
                        continue
                    text = zf.read(name).decode("utf-8", errors="strict")
                    types = component_types(text)
                    if types is None:
                        left_out += "class " in text
                        continue
                    codes.setdefault(hashlib.sha256(text.encode()).hexdigest(), set()).update(types)
            if not args.keep_wheels:
                path.unlink()
            print(f"{dist} {version}: {len(codes)} codes", flush=True)
    about = (
        "SHA-256 of each component module's text as Langflow's released wheels shipped it (langflow-base "
        "0.0.97-0.11.6, lfx 0.1.0-1.12.8), with the component types it defines; modules that run other "
        "text are left out. Made by benchmarks/builtin_codes.py."
    )
    OUT.write_text(
        json.dumps(
            {"about": about, "releases": RELEASES, "codes": {h: sorted(t) for h, t in sorted(codes.items())}},
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"{len(codes)} codes ({left_out} modules left out) -> {OUT.relative_to(ROOT)} ({OUT.stat().st_size} B)")


if __name__ == "__main__":
    main()
