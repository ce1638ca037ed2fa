"""Tiny wheels made in a test, for a local wheel folder uv installs from (``UV_FIND_LINKS``) with no
network: a wheel is a zip of the package's files, its metadata and a RECORD of hashes."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of distribution ``name`` holding ``files`` (path in the wheel -> text)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    entries = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: lfassist-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in entries.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in entries.items():
            zf.writestr(path, text)
    return wheel
