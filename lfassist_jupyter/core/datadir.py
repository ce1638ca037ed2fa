"""Where sessions and saved things live, and how a file there is read and written.

A module of its own so ``%load_ext`` can know the place without importing the session schema
(pydantic builds its models at import, ~150 ms): the standard library and settings only.

The data folder may be shared, synced or tampered with, so nothing in it is trusted: a file is
read only when it is a *regular* file (a FIFO would block the reader forever, a symlink to
``/dev/zero`` would read until memory runs out, a device may act on being opened), and at most
a stated number of bytes of it.  What fails is set aside as ``<name>.corrupt-<n>`` with one
warning, for the user to look at, and the caller starts fresh; files are written atomically
(a temporary file, then a rename that replaces whatever stood at the path, never writing
through it).
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

from lfassist_jupyter import settings

log = logging.getLogger("lfassist_jupyter")

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # a link swapped in after the check is refused, not followed
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check does not block the open
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def default_data_dir() -> Path:
    """``$LFASSIST_DATA_DIR`` or the platform's per-user data directory."""
    configured = settings.read("data_dir")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("lfassist-jupyter", appauthor=False))


class UnsafeFile(ValueError):
    """A data-folder file that is not read: not a regular file, or larger than its cap."""


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def read_regular_file(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``.

    Raises ``FileNotFoundError`` when there is no file, ``UnsafeFile`` (a ``ValueError``) for a
    link, FIFO, device, socket or directory (none of them is opened: ``lstat`` decides, and the
    descriptor opened afterwards must be the same regular file, so a swap in between is refused)
    or for a file past the cap (even one that grows while it is read), ``OSError`` otherwise.
    """
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise UnsafeFile(_kind(before.st_mode))
    if before.st_size > max_bytes:
        raise UnsafeFile(f"larger than {max_bytes:,} bytes")
    fd = os.open(path, _OPEN_FLAGS)
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise UnsafeFile("replaced while it was opened")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafeFile(f"larger than {max_bytes:,} bytes")
    return data


def why(exc: BaseException) -> str:
    """One short line saying why a file was not read; a schema error names the field."""
    listed = getattr(exc, "errors", None)  # pydantic's ValidationError (not imported: %load_ext stays light)
    errors = listed() if callable(listed) else None
    if errors:
        where = ".".join(map(str, errors[0].get("loc") or ()))
        text = f"{type(exc).__name__}" + (f" at {where}" if where else "") + f": {errors[0].get('msg', '')}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    lines = text.splitlines()
    return (lines[0] if lines else text)[:200]


def set_aside(path: Path, what: str, detail: str) -> Path | None:
    """Rename an unreadable ``path`` to ``<name>.corrupt-<n>`` (kept for the user to look at) and
    say so in one warning; the new path, or None when it could not be renamed (it is then ignored)."""
    aside = None
    for n in range(1, 1000):
        candidate = path.with_name(f"{path.name}.corrupt-{n}")
        if not os.path.lexists(candidate):
            try:
                path.replace(candidate)
                aside = candidate
            except OSError:
                pass
            break
    if aside is None:
        log.warning("%s %s could not be read (%s) and could not be set aside; it is ignored.", what, path, detail)
    else:
        log.warning("%s %s could not be read (%s); it was set aside as %s.", what, path.name, detail, aside.name)
    return aside


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: a reader never sees half a
    file, and whatever stood at ``path`` (a link, a FIFO) is replaced, never written through."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
