"""MkDocs hook: the site's home page is the README, with its ``docs/`` links made relative.

One text for both (the repository's front page and the site's), so they cannot drift; a README
link to a page that does not exist fails ``make docs`` like any other broken link.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent


def on_files(files: Files, config) -> Files:
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files
