"""Reflection attacks on the security scan, generated from the facts that decide the rule.

A *primitive* turns a string computed at runtime into an attribute, a module or a frame
(``getattr``, ``operator.attrgetter``, ``pkgutil.resolve_name``, ``sys._getframe``...); a *way*
obtains or aliases it (called directly, bound to a name, mapped, kept in a container, passed as a
default, wrapped in a lambda or a ``functools.partial``, imported under another name, fetched by a
literal ``getattr``...).  Each case is one primitive through one way, written as the body of a
component's output method, and it really reaches what it aims at: ``control_source()`` runs every
case in a plain interpreter (no lfx, never in a test's or a kernel's process) where each one
leaves its marker file: ``os.system("touch MARKER")`` for the ones that reach ``os.system``,
``open(MARKER, "w")`` with a secret read from its caller's frame or a closure for the others.

The cases were split once, before the scan's reflection rule was written, by the parity of a hash
of their id (``held_back``): the rule was developed on the other half, and the held-back half was
run once at the end (the figure is in docs/security.md, "What leaves for Langflow").
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

CMD = "'touch ' + MARKER"
"""The shell command the os.system cases run (``MARKER`` is a name the harness binds)."""

# Ways to compute the attribute name "system" at runtime (each evaluates to it).
NAMES = [
    '"sys" + "tem"',
    '"".join(["sy", "stem"])',
    '"metsys"[::-1]',
    "bytes([115, 121, 115, 116, 101, 109]).decode()",
    "f\"{'sys'}tem\"",
    '"SYSTEM".lower()',
]


@dataclass(frozen=True)
class Case:
    id: str
    imports: str
    """Module-level imports the case needs (besides ``import os``)."""
    prelude: str
    """Module-level code (helpers) before the class."""
    body: str
    """Statements in the output method (``self`` is the component)."""

    @property
    def held_back(self) -> bool:
        return hashlib.sha256(self.id.encode()).digest()[0] % 2 == 1


def _indent(text: str, by: str = "        ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


# -- primitives that reach ``os.system`` through a computed name -------------------------------
# Each: (id, how the primitive is called, given a callable expression F and a name expression N,
# the module the primitive lives in or None for a builtin, its attribute name there).
CALLS = [
    ("getattr", "{F}(os, {N})(" + CMD + ")", None, "getattr"),
    ("attrgetter", "{F}({N})(os)(" + CMD + ")", "operator", "attrgetter"),
    ("methodcaller", "{F}({N}, " + CMD + ")(os)", "operator", "methodcaller"),
    ("resolve_name", '{F}("os:" + {N})(' + CMD + ")", "pkgutil", "resolve_name"),
    ("locate", '{F}("os." + {N})(' + CMD + ")", "pydoc", "locate"),
    ("getattr_static", "{F}(os, {N})(" + CMD + ")", "inspect", "getattr_static"),
    ("object_getattribute", "{F}(os, {N})(" + CMD + ")", "builtins", "object.__getattribute__"),
    ("import_module", '{F}("o" + "s").system(' + CMD + ")", "importlib", "import_module"),
    ("dunder_import", '{F}("o" + "s").system(' + CMD + ")", None, "__import__"),
    ("formatter_get_field", '{F}().get_field("0." + {N}, [os], {{}})[0](' + CMD + ")", "string", "Formatter"),
]

# Ways to obtain F, the primitive as a callable: (id, setup statements, expression), given
# the primitive's direct spelling D, its module M and attribute A.
WAYS = [
    ("direct", "", "{D}"),
    ("alias", "f = {D}", "f"),
    ("container", "fs = {{'k': {D}}}", "fs['k']"),
    ("default_arg", "def pick(f={D}):\n    return f", "pick()"),
    ("lambda", "", "(lambda: {D})()"),
    ("conditional", "", "({D} if self is not None else None)"),
    ("self_attribute", "self._f = {D}", "self._f"),
    ("literal_getattr_of_module", "", "getattr({MODREF}, {ALAST!r})"),
    ("dunder_import_literal", "", "__import__({M!r}).{A}"),
    ("import_module_literal", "import importlib", "importlib.import_module({M!r}).{A}"),
    ("list_element", "", "[{D}][0]"),
    ("next_iter", "", "next(iter([{D}]))"),
]


def _direct(module: str | None, attr: str) -> tuple[str, str]:
    """(imports, spelling) of a primitive called directly."""
    if module is None:
        return "", attr
    if module == "builtins":
        return "", attr  # object.__getattribute__
    return f"import {module}", f"{module}.{attr}"


def _os_cases() -> list[Case]:
    cases = []
    names = itertools.cycle(NAMES)
    for (pid, call, module, attr), (wid, setup, expr) in itertools.product(CALLS, WAYS):
        imports, direct = _direct(module, attr)
        if wid in ("dunder_import_literal", "import_module_literal", "literal_getattr_of_module"):
            if module is None:  # a builtin: through the builtins module by a literal name
                module, mod_attr = "builtins", attr
            elif module == "builtins":
                continue
            else:
                mod_attr = attr
            if "." in mod_attr:
                continue
            extra = f"import {module}" if wid == "literal_getattr_of_module" else ""
            imports = "\n".join(x for x in (imports, extra) if x)
            f = expr.format(M=module, A=mod_attr, MODREF=module, ALAST=mod_attr)
        else:
            f = expr.format(D=direct)
        stmts = setup.format(D=direct) if "{D}" in setup else setup
        body = (stmts + "\n" if stmts else "") + call.format(F=f, N=next(names))
        if setup.startswith("import "):
            imports = "\n".join(x for x in (imports, setup) if x)
            body = call.format(F=f, N=next(names))
        cases.append(Case(f"{pid}-{wid}", imports, "", body))
    # Used as a value, not called with a name of its own: mapped, reduced, partially applied.
    for i, (wid, imports, body) in enumerate(
        [
            ("getattr-map", "", "next(map(getattr, [os], [{N}]))(" + CMD + ")"),
            ("getattr-reduce", "import functools", "functools.reduce(getattr, [{N}], os)(" + CMD + ")"),
            ("getattr-partial", "import functools", "functools.partial(getattr, os)({N})(" + CMD + ")"),
            ("getattr-starmap", "import itertools", "next(itertools.starmap(getattr, [(os, {N})]))(" + CMD + ")"),
            ("attrgetter-map", "import operator", "next(map(operator.attrgetter({N}), [os]))(" + CMD + ")"),
            ("vars-computed", "", "vars(os)[{N}](" + CMD + ")"),
            ("dict-computed", "", "os.__dict__[{N}](" + CMD + ")"),
            ("module-chain-sys-modules", "import json", 'json.codecs.sys.modules["o" + "s"].system(' + CMD + ")"),
            ("getattribute-method", "", "os.__getattribute__({N})(" + CMD + ")"),
            ("type-getattribute", "", "type(os).__getattribute__(os, {N})(" + CMD + ")"),
            ("getattr-builtins-getattr", "import builtins", "builtins.getattr(os, {N})(" + CMD + ")"),
            ("setattr-then-read", "", "setattr(self, 'f', os)\nself.f.system(" + CMD + ")"),
        ]
    ):
        cases.append(Case(wid, imports, "", body.format(N=NAMES[i % len(NAMES)])))
    return cases


# -- primitives that reach a frame or a closure -------------------------------------------------
# The harness calls the method from a function whose local ``SECRET`` is the secret; a case
# finds it from the method's frame (``f_back`` of its own frame) and writes it to MARKER.
FRAME_SOURCES = [
    ("getframe", "import sys", "fr = sys._getframe(0)"),
    ("currentframe", "import inspect", "fr = inspect.currentframe()"),
    ("inspect_stack", "import inspect", "fr = inspect.stack()[0].frame"),
    (
        "walk_tb",
        "import sys, traceback",
        "try:\n    raise ValueError\nexcept ValueError:\n    fr = next(traceback.walk_tb(sys.exc_info()[2]))[0]",
    ),
    (
        "bdb_stack",
        "import bdb, sys",
        "try:\n    raise ValueError\nexcept ValueError:\n    tb = sys.exc_info()[2]\n"
        "fr = bdb.Bdb().get_stack(None, tb)[0][-1][0]",
    ),
    ("traceback_attr", "", "try:\n    raise ValueError\nexcept ValueError as e:\n    fr = e.__traceback__.tb_frame"),
    ("exc_info", "import sys", "try:\n    raise ValueError\nexcept ValueError:\n    fr = sys.exc_info()[2].tb_frame"),
]
FRAME_READS = [
    ("literal", "up = fr.f_back\nsecret = up.f_locals['SECRET']"),
    ("computed_getattr", "up = getattr(fr, 'f_' + 'back')\nsecret = getattr(up, 'f_' + 'locals')['SECRET']"),
    (
        "attrgetter",
        "import operator\nsecret = operator.attrgetter('f_back.f_' + 'locals')(fr)['SECRET']",
    ),
]


def _frame_cases() -> list[Case]:
    cases = []
    for (sid, imports, source), (rid, read) in itertools.product(FRAME_SOURCES, FRAME_READS):
        body = f"{source}\n{read}\nopen(MARKER, 'w').write(secret)"
        cases.append(Case(f"frame-{sid}-{rid}", imports, "", body))
    closure = (
        "KEPT = 'kept'\n\n\ndef keeper():\n    SECRET = 'kept'\n\n"
        "    def inner():\n        return SECRET\n\n    return inner\n"
    )
    for rid, read in [
        ("literal", "secret = keeper().__closure__[0].cell_contents"),
        ("computed_getattr", "secret = getattr(getattr(keeper(), '__clo' + 'sure__')[0], 'cell_' + 'contents')"),
        ("attrgetter", "import operator\nsecret = operator.attrgetter('__closure__')(keeper())[0].cell_contents"),
        ("globals_of_function", "secret = keeper.__globals__['KEPT']"),
        ("code_of_function", "secret = keeper().__code__.co_consts[0] or 'kept'"),
        (
            "gc_referents",
            "import gc\ncells = [o for o in gc.get_referents(keeper()) if isinstance(o, tuple)][0]\n"
            "secret = gc.get_referents(cells[0])[0]",
        ),
        ("generator_globals", "secret = (x for x in [0]).gi_frame.f_globals['KEPT']"),
    ]:
        cases.append(Case(f"closure-{rid}", "", closure, f"{read}\nopen(MARKER, 'w').write(str(secret))"))
    return cases


def cases() -> list[Case]:
    return _os_cases() + _frame_cases()


def method_body(case: Case) -> str:
    """The case as the statements of a component method (``MARKER`` is the component's text)."""
    return "MARKER = self.input_text or 'marker'\n" + case.body


def control_source(all_cases: list[Case], folder: str) -> str:
    """A script that runs every case as a method of a plain object, from a function holding
    ``SECRET``, each writing its own marker file in ``folder`` (``case.id``)."""
    out = ["import os", "SECRET = None"]
    for case in all_cases:
        fn = "case_" + case.id.replace("-", "_")
        out += [case.imports, case.prelude]
        out += [f"def {fn}(self):", _indent(method_body(case), "    ")]
        out += [
            f"class Obj_{fn}:",
            f"    input_text = {folder!r} + '/' + {case.id!r}",
            f"def call_{fn}():",
            "    SECRET = 'from-the-caller'",
            "    try:",
            f"        {fn}(Obj_{fn}())",
            "    except Exception as exc:",
            f"        print({case.id!r}, type(exc).__name__, exc)",
            f"call_{fn}()",
        ]
    return "\n".join(out) + "\n"
