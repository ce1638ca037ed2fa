"""The one deny list: what a component must not do, read by the scan *and* by the sandbox.

Two readers, one table, so the two phases cannot drift apart:

- the security scan (``validation/security.py``, in the kernel) refuses any *reference* to a
  name below, before the code runs anywhere;
- the sandbox's audit hook (``sandbox/worker/_hook.py``, in another interpreter) refuses the
  audit events below while the code runs, and the worker names the deny-list entry an event
  enforces, so a refusal at runtime gets the same words (and the same verdict) as the
  static finding for the same call.

Pure data and the standard library only: the worker runs in an interpreter where
lfassist_jupyter may not be installed. The parent binds this file read-only into the sandbox
and the zygote loads it as its package's module ``_lfassist_worker.policy`` (see
``sandbox/_isolation.py``, ``bound_modules``), so the hook's ``from . import policy`` reads
this very file.
"""

from __future__ import annotations

# Modules whose every use is refused (importing one is the finding).
MODULES: dict[str, str] = {
    "subprocess": "runs shell commands",
    "_posixsubprocess": "runs shell commands",
    "ctypes": "calls native code",
    "_ctypes": "calls native code",
    "cffi": "calls native code",
    "_cffi_backend": "calls native code",
    "pickle": "executes code while loading data",
    "_pickle": "executes code while loading data",
    "cPickle": "executes code while loading data",
    "dill": "executes code while loading data",
    "cloudpickle": "executes code while loading data",
    "marshal": "loads raw bytecode",
    "shelve": "unpickles data",
    "multiprocessing": "spawns processes",
    "pty": "spawns terminals",
    "code": "runs an interactive interpreter",
    "codeop": "compiles code dynamically",
    "_posixshmem": "shares memory beyond the process (it outlives the request)",
    "_imp": "loads code from a file",
    "imp": "loads code from a file",
    "zipimport": "loads code from a file",
    "runpy": "runs code from a file",
    "readline": "reads and writes any file in C, where the sandbox's checks do not see it",
    # Debuggers: they hand out the frames of the code that called the component (bdb.Bdb().get_stack)
    # and run code given as text (pdb.run).
    "bdb": "walks the interpreter's frames",
    "pdb": "walks the interpreter's frames and runs code given as text",
}

# Built-in functions refused by name (reached bare, through ``builtins`` or a namespace).
BUILTINS: dict[str, str] = {
    "exec": "executes arbitrary code",
    "eval": "executes arbitrary code",
    "compile": "compiles arbitrary code",
    "__import__": "imports code dynamically",
    "breakpoint": "stops the process",
}

# ``module.attr`` refused (the module itself is fine: ``os.path`` is).
ATTRS: dict[str, str] = {
    "os.system": "runs shell commands",
    "os.popen": "runs shell commands",
    "os.fork": "spawns processes",
    "os.forkpty": "spawns processes",
    "os.kill": "kills processes",
    "os.killpg": "kills processes",
    "os._exit": "kills the process",
    "os.abort": "kills the process",
    "os.setuid": "changes privileges",
    "os.chmod": "changes file permissions",
    "os.chown": "changes file ownership",
    "os.remove": "deletes files",
    "os.unlink": "deletes files",
    "os.rmdir": "deletes directories",
    "os.removedirs": "deletes directories",
    "os.dup2": "rewires the process's file descriptors",
    "os.putenv": "changes the server's environment",
    "os.unsetenv": "changes the server's environment",
    "shutil.rmtree": "deletes directory trees",
    "sys.exit": "stops the process",
    "sys.settrace": "tampers with the interpreter",
    "sys.setprofile": "tampers with the interpreter",
    "sys.addaudithook": "tampers with the interpreter",
    "builtins.exec": "executes arbitrary code",
    "builtins.eval": "executes arbitrary code",
    "importlib.import_module": "imports code dynamically",
    "importlib.reload": "imports code dynamically",
    "importlib.__import__": "imports code dynamically",
    "importlib.exec_module": "executes a module from a file",
    "importlib.spec_from_file_location": "loads code from a file",
    "importlib.module_from_spec": "loads code from a file",
    "importlib.SourceFileLoader": "loads code from a file",
    "importlib.SourcelessFileLoader": "loads code from a file",
    "importlib.ExtensionFileLoader": "loads native code from a file",
    "importlib.load_source": "loads code from a file",
    "importlib.invalidate_caches": "imports a module the code just wrote",
    "site.addsitedir": "adds a directory to the import path",
    "pandas.read_pickle": "executes code while loading data",
    # Frames reach beyond the component: the code that called it, its arguments and answer.
    "sys._getframe": "walks the interpreter's frames",
    "sys._current_frames": "walks the interpreter's frames",
    "inspect.currentframe": "walks the interpreter's frames",
    "inspect.stack": "walks the interpreter's frames",
    "inspect.trace": "walks the interpreter's frames",
    "inspect.getouterframes": "walks the interpreter's frames",
    "inspect.getinnerframes": "walks the interpreter's frames",
    "traceback.walk_stack": "walks the interpreter's frames",
    "traceback.walk_tb": "walks the interpreter's frames",
    "logging.currentframe": "walks the interpreter's frames",
    "inspect.getframeinfo": "walks the interpreter's frames",
    "inspect.getclosurevars": "reads a function's closure and globals",
    "inspect.getgeneratorlocals": "reads another function's variables",
    "inspect.getcoroutinelocals": "reads another function's variables",
    "inspect.getasyncgenlocals": "reads another function's variables",
    "inspect.getmembers": "reads every attribute of an object by name (reflection)",
    "inspect.getmembers_static": "reads every attribute of an object by name (reflection)",
    # The collector hands out any live object: frames, closures, the sandbox's own state.
    "gc.get_referrers": "reaches any live object (frames and closures included)",
    "gc.get_referents": "reaches any live object (frames and closures included)",
    "gc.get_objects": "reaches any live object (frames and closures included)",
    "gc.garbage": "reaches any live object (frames and closures included)",
    # A format string names attributes at runtime: Formatter().get_field("0.system", [os], {}) is os.system.
    "string.Formatter": "reads attributes named in a format string (reflection)",
}

# ``module.<prefix>*`` refused (os.execv, os.spawnl, ...).
PREFIXES: dict[str, str] = {
    "os.exec": "replaces the process",
    "os.spawn": "spawns processes",
    "os.posix_spawn": "spawns processes",
}

# Other names for the same module: ``posix.system`` is ``os.system``.
MODULE_ALIASES: dict[str, str] = {"posix": "os", "nt": "os"}

# Attributes that reach objects outside the component (reading __mro__ is introspection).
DUNDER_ESCAPES: dict[str, str] = {
    "__subclasses__": "escapes the component's scope",
    "__globals__": "escapes the component's scope",
    "__builtins__": "escapes the component's scope",
    "__code__": "escapes the component's scope",
    # Frame walking (Langflow's own scan refuses the same names): from any frame, ``f_back``
    # leads to the code that called the component, and ``f_locals`` to everything it holds.
    "f_back": "walks the interpreter's frames",
    "f_locals": "walks the interpreter's frames",
    "f_globals": "walks the interpreter's frames",
    "f_builtins": "walks the interpreter's frames",
    "f_trace": "walks the interpreter's frames",
    "tb_frame": "walks the interpreter's frames",
    "gi_frame": "walks the interpreter's frames",
    "cr_frame": "walks the interpreter's frames",
    "ag_frame": "walks the interpreter's frames",
    # A closure's cells hold another function's variables, and can be written.
    "__closure__": "reads another function's variables",
    "cell_contents": "reads another function's variables",
}

# Reflection: what turns a string into an attribute, a module or an object. Called with a name
# the code spells out (a literal, or constants joined), it is judged as that name (``getattr(os,
# "path")`` is ``os.path``); with a name computed at runtime, or used as a value (passed, mapped,
# aliased, stored), what it reaches cannot be known from the code, so it is refused -- except a
# component's attribute by name on its own ``self``, which reaches nothing ``self.<name>`` would
# not.  Keyed by qualified name; the value is how the name argument is read:
#   "attr": (obj, name, ...) -- an attribute of obj; "names": (*names) -- dotted attribute paths,
#   "object": (dotted) -- a module and its attributes; "module": (module name).
REFLECTION: dict[str, str] = {
    "builtins.getattr": "attr",
    "builtins.hasattr": "attr",
    "builtins.setattr": "attr",
    "builtins.delattr": "attr",
    "inspect.getattr_static": "attr",
    "operator.attrgetter": "names",
    "operator.methodcaller": "names",
    "pkgutil.resolve_name": "object",
    "pydoc.locate": "object",
    "importlib.import_module": "module",
    "builtins.__import__": "module",
}
# The same, spelt as a method of any object: ``object.__getattribute__(os, name)``,
# ``os.__getattribute__(name)``.
REFLECTION_METHODS: frozenset[str] = frozenset({"__getattribute__", "__getattr__", "__setattr__", "__delattr__"})

# The import path: changing it lets ``import`` load a module or a native library the code wrote.
IMPORT_PATH: dict[str, str] = {
    "sys.path": "changes the import path (a module or library the code wrote could be imported)",
    "sys.meta_path": "changes how modules are found (code the component wrote could be loaded)",
    "sys.path_hooks": "changes how modules are found (code the component wrote could be loaded)",
    "sys.path_importer_cache": "changes how modules are found (code the component wrote could be loaded)",
}
# Files named like these are modules or native libraries: writing one is how code gets loaded.
CODE_SUFFIXES: tuple[str, ...] = (".py", ".pyc", ".pyd", ".pyw", ".so", ".dylib", ".dll", ".pth")

# -- the sandbox's audit hook ------------------------------------------------------------
# Audit event -> the deny-list entry it enforces (None: refused at runtime only, no
# component API reaches it by a name the scan could see).
EVENTS: dict[str, str | None] = {
    "os.system": "os.system",
    "os.exec": "os.exec*",
    "os.posix_spawn": "os.posix_spawn",
    "os.spawn": "os.spawn*",
    "os.fork": "os.fork",
    "os.forkpty": "os.forkpty",
    "os.kill": "os.kill",
    "os.killpg": "os.killpg",
    "subprocess.Popen": "subprocess",
    "pty.spawn": "pty",
    "resource.setrlimit": None,
    "resource.prlimit": None,
    "os.setuid": "os.setuid",
    "sys.addaudithook": "sys.addaudithook",
    "os.startfile": None,
    "os.putenv": "os.putenv",
    "os.unsetenv": "os.unsetenv",
    "signal.pthread_kill": None,
    "ctypes.dlopen": "ctypes",
    "ctypes.dlsym": "ctypes",
    "ctypes.call_function": "ctypes",
    "ctypes.cdata": "ctypes",
    "ctypes.addressof": "ctypes",
    "ctypes.string_at": "ctypes",
    "ctypes.wstring_at": "ctypes",
    "os.mkfifo": None,
    "os.mknod": None,
    "os.setxattr": None,
    "os.removexattr": None,
    "os.chdir": None,
    "os.chroot": None,
    "sys.settrace": "sys.settrace",
    "sys.setprofile": "sys.setprofile",
}
NETWORK_EVENTS: frozenset[str] = frozenset(
    {
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
        "socket.bind",
    }
)
# Refused only for paths outside the sandbox's directory (inside it they are harmless).
PATH_EVENTS: frozenset[str] = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.rename",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "shutil.rmtree",
        "os.link",
        "os.symlink",
        "os.mkdir",
        "os.utime",
    }
)
# Imports the hook refuses: fresh copies of modules whose dangerous functions were taken away.
FRESH_IMPORTS: frozenset[str] = frozenset(
    {"_posixsubprocess", "_ctypes", "ctypes", "_testcapi", "_testinternalcapi", "_posixshmem", "readline"}
)


def why(name: str) -> str | None:
    """Why ``name`` (a module, ``module.attr`` or ``builtins.x``) is refused, or None."""
    for path, reason in IMPORT_PATH.items():
        if name == path or name.startswith(path + "."):
            return reason
    top, _, rest = name.partition(".")
    top = MODULE_ALIASES.get(top, top)
    if top in MODULES:
        return MODULES[top]
    if not rest:
        return None
    attr = rest.rsplit(".", 1)[-1]
    if top == "builtins" and attr in BUILTINS:
        return BUILTINS[attr]
    key = f"{top}.{attr}"
    if key in ATTRS:
        return ATTRS[key]
    return next((w for p, w in PREFIXES.items() if key.startswith(p)), None)


def event_reason(event: str) -> str:
    """The words the scan uses for what an audit event refuses (the same for both phases)."""
    entry = EVENTS.get(event)
    if entry is None:
        return "is refused by the sandbox"
    return why(entry.rstrip("*")) or "is refused by the sandbox"


def refused_attribute(name: str) -> tuple[str, str] | None:
    """(the deny-list entry, why) when an attribute *name* is refused on whatever object it is
    read from (a frame's ``f_locals``, a function's ``__globals__``) or is the name of a refused
    function of some module (``system`` is ``os.system``'s): what ``attrgetter("system")`` may
    reach.  None otherwise."""
    if name in DUNDER_ESCAPES:
        return name, DUNDER_ESCAPES[name]
    for key, reason in ATTRS.items():
        if key.rsplit(".", 1)[-1] == name:
            return key, reason
    for key, reason in PREFIXES.items():
        stem = key.rsplit(".", 1)[-1]
        if name.startswith(stem) and name[len(stem) :] in _EXEC_SUFFIXES:
            return f"{key}*", reason
    if name in BUILTINS:
        return f"builtins.{name}", BUILTINS[name]
    return None


# What follows a PREFIXES stem in the functions it stands for (os.execvpe, os.spawnl, os.posix_spawnp).
_EXEC_SUFFIXES = frozenset({"", "p", "l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"})


def has_banned_attrs(module: str) -> bool:
    """Whether some attribute of ``module`` is refused (so ``getattr(module, name)`` is)."""
    module = MODULE_ALIASES.get(module, module)
    return (
        module in MODULES
        or module == "builtins"
        or any(k.startswith(module + ".") for k in ATTRS)
        or any(p.startswith(module + ".") for p in PREFIXES)
    )
