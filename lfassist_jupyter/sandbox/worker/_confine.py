"""Confinement of the worker's processes: rlimits, prctl, and a child's seccomp + Landlock layers.

A module of the worker package (stdlib only), imported by the zygote's script before lfx
and the rest of the worker; it holds no state of a request.  ``CONFINE`` is the one shared value:
the layers that worked in the zygote's probe (``confinement()``), filled by the zygote once
(mutated in place, never rebound) and applied by every child (``confine()``) right after the
fork, before anything of a request exists in it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys

# -- limits ----------------------------------------------------------------------------


def set_limit(which: int, soft: int, hard: int | None = None) -> None:
    try:
        _cur_soft, cur_hard = resource.getrlimit(which)
        hard = cur_hard if hard is None else hard
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass


# -- prctl (Linux) ------------------------------------------------------------------------

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36


def prctl(option: int, value: int) -> bool:
    """prctl(2) through ctypes, loaded in the zygote (the child's hook refuses ctypes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return _libc().prctl(option, value, 0, 0, 0) == 0
    except Exception:
        return False


# -- confinement of a child (Linux): seccomp and Landlock --------------------------------
#
# The audit hook sees Python-level calls only.  Two kernel layers, installed by each child
# right after the fork (trusted code, before anything of a request runs) and inherited by
# whatever it starts, hold below it, in the full and the reduced sandbox alike:
#
# - a seccomp filter: no signal to another process (kill, tgkill, sigqueue only aimed at
#   itself: os.abort and raise still work; no tkill, no pidfd_open / pidfd_send_signal /
#   pidfd_getfd), no ptrace, process_vm_readv/writev, kcmp or process_madvise, no
#   resource or scheduling change of another process (prlimit64, sched_set*), and no
#   memfd_create (anonymous files would hold memory outside the scratch space's limit).
#   So a request cannot kill, stop, wait on or read the zygote or the spare child that
#   waits for the next request;
# - Landlock: the child may create, write, truncate, rename and remove files only below its
#   own scratch directory (and write /dev/null), whoever asks -- ``open``, sqlite, any C
#   library -- so nothing it writes can reach the next request, HOME or the host; with
#   Landlock ABI 6 it also cannot signal or reach abstract sockets outside its own domain.
#
# ``confinement()`` tries both once in a throw-away child before the zygote says "ready";
# every later child must apply what worked there, or it exits without serving.

_SECCOMP_ARCH = {  # machine: (AUDIT_ARCH_*, seccomp syscall, {name: number})
    "x86_64": (
        0xC000003E,
        317,
        {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
         "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "prlimit64": 302,
         "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
         "migrate_pages": 256, "move_pages": 279, "perf_event_open": 298, "memfd_create": 319},
    ),
    "aarch64": (  # the generic table (asm-generic/unistd.h)
        0xC00000B7,
        277,
        {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
         "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "prlimit64": 261,
         "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
         "migrate_pages": 238, "move_pages": 239, "perf_event_open": 241, "memfd_create": 279},
    ),
}  # fmt: skip
_SECCOMP_SAME = {"pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
                 "process_mrelease": 448}  # fmt: skip
_SECCOMP_DENY = ("tkill", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "perf_event_open",
                 "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "process_madvise", "process_mrelease",
                 "memfd_create")  # fmt: skip
_SECCOMP_SELF = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # first argument: our own pid only
_SECCOMP_SELF_OR_0 = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
                      "migrate_pages", "move_pages")  # fmt: skip  # first argument: 0 (= the caller) or our pid

# Landlock: the file-system rights it handles (denied unless a rule allows them).
_LL_WRITE_FILE, _LL_TRUNCATE = 1 << 1, 1 << 14
_LL_WRITES_V1 = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make *
_LL_REFER = 1 << 13  # ABI 2: link/rename across directories
_LL_SCOPES = 0b11  # ABI 6: abstract unix sockets, signals
_SYS_LANDLOCK_CREATE, _SYS_LANDLOCK_ADD, _SYS_LANDLOCK_RESTRICT = 444, 445, 446  # every architecture
_PR_SET_NO_NEW_PRIVS = 38
_LIBC: list = []


def _libc():
    """libc through ctypes, loaded once in the zygote (a child's hook refuses ctypes)."""
    if not _LIBC:
        import ctypes

        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        _LIBC.append(lib)
    return _LIBC[0]


def _seccomp_program(me: int) -> bytes | None:
    """The classic-BPF filter for a child whose pid is ``me``, or None on an unknown machine."""
    import platform
    import struct

    arch = _SECCOMP_ARCH.get(platform.machine())
    if arch is None:
        return None
    audit_arch, _nr, table = arch
    nr = {**table, **_SECCOMP_SAME}
    allow, eperm = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    # (op, k, label): "ld" loads a 32-bit word of seccomp_data (nr at 0, arch at 4, the low
    # half of args[0] at 16), "ret" answers, jumps go to a label when true ("jne": when false).
    code: list[tuple] = [("ld", 4, None), ("jne", audit_arch, "deny"), ("ld", 0, None)]
    code.append(("jge", 0x40000000, "deny"))  # x32 system calls
    code += [("jeq", nr[name], "deny") for name in _SECCOMP_DENY]
    code += [("jeq", nr[name], "self") for name in _SECCOMP_SELF]
    code += [("jeq", nr[name], "self_or_0") for name in _SECCOMP_SELF_OR_0]
    code += [("ret", allow, None)]
    code += [("label", 0, "self_or_0"), ("ld", 16, None), ("jeq", 0, "allow")]
    code += [("label", 0, "self"), ("ld", 16, None), ("jeq", me, "allow")]
    code += [("label", 0, "deny"), ("ret", eperm, None), ("label", 0, "allow"), ("ret", allow, None)]
    labels, at = {}, 0
    for op, _k, label in code:
        if op == "label":
            labels[label] = at
        else:
            at += 1
    out, at = [], 0
    for op, k, label in code:
        if op == "label":
            continue
        if op == "ld":
            out.append(struct.pack("HBBI", 0x20, 0, 0, k))  # BPF_LD | BPF_W | BPF_ABS
        elif op == "ret":
            out.append(struct.pack("HBBI", 0x06, 0, 0, k))  # BPF_RET | BPF_K
        else:
            skip = labels[label] - at - 1
            jt, jf = (0, skip) if op == "jne" else (skip, 0)
            out.append(struct.pack("HBBI", 0x35 if op == "jge" else 0x15, jt, jf, k))  # BPF_JMP | JGE/JEQ | K
        at += 1
    return b"".join(out)


def _install_seccomp() -> None:
    import ctypes
    import platform

    program = _seccomp_program(os.getpid())
    if program is None:
        raise OSError(f"no seccomp filter for {platform.machine()}")
    libc = _libc()

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    prog = _Fprog(len(program) // 8, ctypes.addressof(buf))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    # SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC: every thread of the process.
    if libc.syscall(_SECCOMP_ARCH[platform.machine()][1], 1, 1, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp")


def _landlock_abi() -> int:
    try:
        abi = _libc().syscall(_SYS_LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    except Exception:
        return 0
    return max(int(abi), 0)


def _install_landlock(abi: int, scratch: str) -> None:
    """Writes of any kind only below ``scratch`` (and to /dev/null) from now on."""
    writes = landlock_writes(abi)
    restrict_paths(abi, [(scratch, writes), (os.devnull, writes & (_LL_WRITE_FILE | _LL_TRUNCATE))], writes)


# Landlock's read and execute rights, for a process that may read only what it is given (the real
# runner's children: ``sandbox/_local_runner.py``).
LL_EXECUTE, LL_READ_FILE, LL_READ_DIR = 1 << 0, 1 << 2, 1 << 3
LL_READ = LL_READ_FILE | LL_READ_DIR
_LL_FILE_RIGHTS = LL_EXECUTE | _LL_WRITE_FILE | LL_READ_FILE | _LL_TRUNCATE  # what a rule on a non-directory may hold


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    return _landlock_abi()


def landlock_writes(abi: int) -> int:
    """Every right that creates, writes, truncates, renames or removes a file, at ``abi``."""
    return _LL_WRITES_V1 | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)


def restrict_paths(abi: int, rules: list[tuple[str, int]], handled: int) -> None:
    """Landlock for this process and whatever it starts, from now on: each right of ``handled`` only
    below the paths ``rules`` grant it to (``(path, rights)``; a path that does not exist is skipped,
    a file gets only the rights a file can have); with ABI 6 also no signal and no abstract Unix
    socket outside its own domain. Raises ``OSError`` when the kernel refuses it."""
    import ctypes
    import struct

    libc = _libc()
    attr = struct.pack("QQQ", handled, 0, _LL_SCOPES) if abi >= 6 else struct.pack("Q", handled)
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE, attr, len(attr), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= _LL_FILE_RIGHTS
                rule = struct.pack("=Qi", rights & handled, fd)  # struct landlock_path_beneath_attr (packed)
                if rights & handled and libc.syscall(_SYS_LANDLOCK_ADD, ruleset, 1, rule, 0) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")  # LANDLOCK_RULE_PATH_BENEATH
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if libc.syscall(_SYS_LANDLOCK_RESTRICT, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


# What every child applies (filled by ``confinement()`` in the zygote before the first spare).
CONFINE = {"seccomp": False, "landlock": 0}


def confine(scratch: str) -> None:
    """Apply ``CONFINE`` to this (child) process; raises when a layer that worked before fails."""
    if CONFINE["seccomp"]:
        _install_seccomp()
    if CONFINE["landlock"]:
        _install_landlock(CONFINE["landlock"], scratch)


def confinement(probe_dir: str) -> dict:
    """Which layers work here: each tried in a throw-away child (they cannot be undone)."""
    found = {"seccomp": False, "landlock": 0}
    if not sys.platform.startswith("linux"):
        return found
    abi = _landlock_abi()
    for layer, value in (("seccomp", True), ("landlock", abi)):
        if not value:
            continue
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the probe child
            ok = False
            try:
                if layer == "seccomp":
                    _install_seccomp()
                    ok = True
                    with contextlib.suppress(OSError):  # the filter must answer EPERM, not let it through
                        os.kill(os.getppid(), 0)
                        ok = False
                else:
                    _install_landlock(abi, os.path.join(probe_dir, "in"))
                    try:
                        os.close(os.open(os.path.join(probe_dir, "out"), os.O_CREAT | os.O_WRONLY, 0o600))
                    except PermissionError:
                        ok = True
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            found[layer] = value
    return found
