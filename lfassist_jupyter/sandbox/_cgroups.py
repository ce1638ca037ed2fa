"""A real run's bounds as a whole: one cgroup per run, where the machine offers one.

A real run may start processes; an address-space limit (RLIMIT_AS) is per process, so ten
processes hold ten times as much, and nothing per process bounds how many there are.  A cgroup
does both for every process of the run together (threads count as processes), and it ends them
all at once: frozen first (nothing forks any more), then killed.  The kernel process makes and
removes the groups -- the runner, under bubblewrap, sees no cgroup file system -- and puts each
run's first two processes in its group before the run exists (``local_run.RealRunner``);
everything the run starts is then in it.

What the machine offers, probed once (``probe``):

- cgroup v1, where the ``pids`` and ``memory`` hierarchies are writable below this process's own
  groups (root on most machines, or a container that delegates them; ``freezer`` too, when it is
  there, to stop a run before killing it);
- cgroup v2 with systemd's delegation to the user (``user@<uid>.service``, where desktop sessions
  run their applications): a group of ours beside this process's own, with ``pids`` and
  ``memory`` enabled below it, one group per run in it (``cgroup.kill`` ends them);
- neither: ``None``, with the reason the run's answer states; the runner then bounds each run by
  RLIMIT_NPROC inside the run's user namespace (its processes only) and RLIMIT_AS per process.

Group names carry this process's pid (``lfassist-<pid>-...``): a group left behind by a kernel
that died is removed by the next probe, once empty.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "lfassist-"


@dataclass
class RunGroup:
    """One run's group (a directory in each hierarchy it uses); ``end`` removes it."""

    version: int
    dirs: dict[str, Path]
    """controller ("pids", "memory", "freezer"; "unified" for v2) -> its directory."""
    memory_mb: int
    processes: int
    ended: bool = False
    notes: list[str] = field(default_factory=list)

    def add(self, pids: list[int]) -> None:
        """Put each process (a host pid) in the group, in every hierarchy; raises ``OSError``."""
        for pid in pids:
            for directory in self.dirs.values():
                (directory / "cgroup.procs").write_text(str(pid))

    def procs(self) -> set[int]:
        found: set[int] = set()
        for directory in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(x) for x in (directory / "cgroup.procs").read_text().split())
        return found

    def end(self, wait: float = 5.0) -> list[str]:
        """Stop every process of the group, kill them, remove the group; what the run ran into
        (its process or memory bound), in words."""
        if self.ended:
            return self.notes
        self.ended = True
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs["unified"] / "cgroup.kill").write_text("1")
        else:
            freezer = self.dirs.get("freezer")
            frozen = freezer is not None and _write(freezer / "freezer.state", "FROZEN")
            if frozen:
                deadline = time.monotonic() + 1.0
                while _read(freezer / "freezer.state") != "FROZEN" and time.monotonic() < deadline:  # type: ignore[operator]
                    time.sleep(0.001)
            for pid in self.procs():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if frozen:
                _write(freezer / "freezer.state", "THAWED")  # type: ignore[operator]
        deadline = time.monotonic() + wait
        while (left := self.procs()) and time.monotonic() < deadline:
            for pid in left:  # without a freezer, what forked meanwhile (the pids bound holds them few)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)
        self.notes = self._bounds_reached()
        # Nothing of the run runs any more; removing its (empty) groups takes the kernel a while
        # (a memory group's accounting is torn down): not on the way of the run's answer.
        threading.Thread(target=self.remove, name="lfassist-cgroup-rmdir", daemon=True).start()
        return self.notes

    def remove(self) -> None:
        for directory in self.dirs.values():
            _rmdir(directory)

    def _bounds_reached(self) -> list[str]:
        notes = []
        if self.version == 2:
            events = _keyed(self.dirs["unified"] / "pids.events")
            memory = _keyed(self.dirs["unified"] / "memory.events")
        else:
            events = _keyed(self.dirs["pids"] / "pids.events") if "pids" in self.dirs else {}
            memory = _keyed(self.dirs["memory"] / "memory.oom_control") if "memory" in self.dirs else {}
        if events.get("max"):
            notes.append(f"it reached its bound of {self.processes} processes and threads")
        if memory.get("oom_kill"):
            notes.append(
                f"it reached its memory bound of {self.memory_mb} MB (the system ended {memory['oom_kill']} "
                "of its processes)"
            )
        return notes


@dataclass
class Bounds:
    """Where this machine lets us make run groups."""

    version: int
    parents: dict[str, Path]
    """controller -> the directory the run groups are made in."""
    counter: int = 0
    _made: list[RunGroup] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def text(self) -> str:
        return f"cgroup v{self.version}"

    def take(self, memory_mb: int, processes: int) -> RunGroup:
        """A group for the next run: one made ahead (``make_ahead``) with these bounds, else a new one."""
        with self._lock:
            for group in self._made:
                if (group.memory_mb, group.processes) == (memory_mb, processes):
                    self._made.remove(group)
                    return group
        return self.new_group(memory_mb, processes)

    def make_ahead(self, memory_mb: int, processes: int) -> None:
        """Make the next run's group now (in the background): the run then only moves its processes in."""

        def make() -> None:
            with contextlib.suppress(OSError):
                group = self.new_group(memory_mb, processes)
                with self._lock:
                    self._made.append(group)

        threading.Thread(target=make, name="lfassist-cgroup-ahead", daemon=True).start()

    def close(self) -> None:
        """Remove the groups made ahead (none of them ever held a process)."""
        with self._lock:
            made, self._made[:] = list(self._made), []
        for group in made:
            group.remove()

    def new_group(self, memory_mb: int, processes: int) -> RunGroup:
        """A fresh group with the run's bounds; raises ``OSError`` when the machine refuses it."""
        with self._lock:
            self.counter += 1
            name = f"{PREFIX}{os.getpid()}-{self.counter}"
        made: dict[str, Path] = {}
        try:
            for controller, parent in self.parents.items():
                directory = parent / name
                directory.mkdir(mode=0o755)
                made[controller] = directory
            group = RunGroup(self.version, made, memory_mb, processes)
            limit = str(memory_mb * 1024 * 1024)
            if self.version == 2:
                unified = made["unified"]
                (unified / "pids.max").write_text(str(processes))
                (unified / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):
                    (unified / "memory.swap.max").write_text("0")
            else:
                (made["pids"] / "pids.max").write_text(str(processes))
                (made["memory"] / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):  # no swap either, where swap is accounted
                    (made["memory"] / "memory.memsw.limit_in_bytes").write_text(limit)
            return group
        except OSError:
            for directory in made.values():
                _rmdir(directory)
            raise


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _keyed(path: Path) -> dict[str, int]:
    """A cgroup file of ``key value`` lines (``pids.events``, ``memory.events``, ``memory.oom_control``)."""
    out = {}
    for line in (_read(path) or "").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


def _rmdir(directory: Path) -> None:
    """Remove a run group (its child groups first: a v2 run's own); a group with processes left stays."""
    with contextlib.suppress(OSError):
        for child in directory.iterdir():
            if child.is_dir():
                _rmdir(child)
    for _ in range(50):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.002)  # the last process's exit is still being accounted


def _mounts() -> dict[str, tuple[str, str]]:
    """controller -> (mount point, the hierarchy's root in that mount) of each cgroup file system;
    "unified" for v2."""
    found: dict[str, tuple[str, str]] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            head, _, tail = line.partition(" - ")
            parts, kinds = head.split(), tail.split()
            if len(parts) < 5 or len(kinds) < 3:
                continue
            root, point = parts[3], parts[4]
            if kinds[0] == "cgroup2":
                found.setdefault("unified", (point, root))
            elif kinds[0] == "cgroup":
                for option in kinds[2].split(","):
                    if option in ("pids", "memory", "freezer"):
                        found.setdefault(option, (point, root))
    return found


def _own_groups() -> dict[str, str]:
    """controller -> this process's group in that hierarchy ("unified" for v2)."""
    found = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                found["unified"] = path
            for name in controllers.split(","):
                if name in ("pids", "memory", "freezer"):
                    found[name] = path
    return found


def _inside(point: str, root: str, path: str) -> Path | None:
    """The directory of group ``path`` under a mount of the hierarchy's ``root`` at ``point``."""
    root = root.rstrip("/")
    if root and not (path == root or path.startswith(root + "/")):
        return None  # our group is not visible in this mount
    return Path(point) / path[len(root) :].lstrip("/")


def _usable(parent: Path) -> bool:
    """Whether we may make (and remove) a group below ``parent``."""
    probe = parent / f"{PREFIX}{os.getpid()}-probe"
    try:
        probe.mkdir(mode=0o755)
    except FileExistsError:
        pass
    except OSError:
        return False
    _rmdir(probe)
    return True


def _sweep(parent: Path) -> None:
    """Remove the empty groups of kernels that are gone (``lfassist-<pid>-...`` of a dead pid)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if not entry.name.startswith(PREFIX) or not entry.is_dir():
                continue
            owner = entry.name[len(PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and int(owner) != os.getpid() and not os.path.exists(f"/proc/{owner}"):
                _rmdir(entry)


def _v1(mounts: dict[str, tuple[str, str]], own: dict[str, str]) -> tuple[Bounds | None, str]:
    if "pids" not in mounts or "memory" not in mounts:
        return None, "no cgroup v1 pids and memory hierarchies"
    parents: dict[str, Path] = {}
    for controller in ("pids", "memory", "freezer"):
        if controller not in mounts:
            continue
        point, root = mounts[controller]
        parent = _inside(point, root, own.get(controller, "/"))
        if parent is None or not _usable(parent):
            if controller == "freezer":
                continue  # without it, runs are killed without being stopped first
            return None, f"the cgroup v1 {controller} hierarchy is not writable here"
        parents[controller] = parent
    for parent in parents.values():
        _sweep(parent)
    return Bounds(1, parents), ""


def _v2(mounts: dict[str, tuple[str, str]], own: dict[str, str]) -> tuple[Bounds | None, str]:
    if "unified" not in mounts or "unified" not in own:
        return None, "no cgroup v2"
    point, root = mounts["unified"]
    mine = _inside(point, root, own["unified"])
    if mine is None or "/user@" not in own["unified"] or mine.parent == Path(point):
        return None, "no cgroup delegated to you (systemd's user@.service)"
    parent = mine.parent  # a group of ours beside our own: ours has processes, so no groups below it
    controllers = (_read(parent / "cgroup.subtree_control") or "").split()
    if "pids" not in controllers or "memory" not in controllers:
        return None, "the delegated cgroup v2 does not offer the pids and memory controllers"
    ours = parent / f"{PREFIX}{os.getpid()}-runs"
    try:
        ours.mkdir(mode=0o755, exist_ok=True)
        (ours / "cgroup.subtree_control").write_text("+pids +memory")
    except OSError as exc:
        _rmdir(ours)
        return None, f"the delegated cgroup v2 is not writable ({exc.strerror or exc})"
    _sweep(parent)
    return Bounds(2, {"unified": ours}), ""


@functools.lru_cache(maxsize=1)
def probe() -> tuple[Bounds | None, str]:
    """(where run groups are made, "") or (None, why not), once per process."""
    if not os.path.isdir("/proc/self") or not Path("/proc/self/cgroup").exists():
        return None, "no cgroups on this system"
    mounts, own = _mounts(), _own_groups()
    bounds, why_v1 = _v1(mounts, own)
    if bounds is not None:
        return bounds, ""
    bounds, why_v2 = _v2(mounts, own)
    if bounds is not None:
        return bounds, ""
    return None, why_v2 if "unified" in mounts and "pids" not in mounts else why_v1


def host_pids(root: int, wanted: set[int]) -> dict[int, int]:
    """Our pids of processes below ``root`` (bubblewrap, the runner's outermost process) known by
    their pids in the runner's PID namespace, one level below ours (``NSpid`` in
    /proc/<pid>/status lists a process's pid in each namespace, ours first): pid there -> ours."""
    from lfassist_jupyter.sandbox.worker._channel import descendants

    found: dict[int, int] = {}
    for pid, _ in descendants(root):
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("NSpid:"):
                    ids = [int(x) for x in line.split()[1:]]
                    if len(ids) > 1 and ids[1] in wanted:
                        found[ids[1]] = ids[0]
                    break
    return found
