"""The documentation: a README a newcomer reads in five minutes, and a site that builds clean.

``make docs`` builds ``docs/`` with MkDocs in strict mode; the same build runs here, so a page that
links to a missing page or anchor (the README included: it is the site's home page) fails the suite,
not only a docs run nobody makes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_is_short_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert readme.index("## Install") < readme.index("## Two commands") < readme.index("## 30 seconds")
    targets = re.findall(r"\]\(((?!https?:)[^)#]+)", readme)
    assert targets, "the README links to its docs"
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    mkdocs = pytest.importorskip("mkdocs")
    del mkdocs
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "index.html").read_text(encoding="utf-8").count("Two commands") >= 1


def test_a_broken_link_fails_the_build(tmp_path):
    """The control: strict mode really refuses a link to a page that does not exist."""
    pytest.importorskip("mkdocs")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[gone](nowhere.md)\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nvalidation:\n  unrecognized_links: warn\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "nowhere.md" in out.stdout + out.stderr
