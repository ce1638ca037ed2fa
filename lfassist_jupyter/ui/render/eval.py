"""An eval run (``SuiteResult``) in a notebook: its aligned text table, kept as text so the
notebook, the CLI and a CI log read the same."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfassist_jupyter.eval import SuiteResult


def suite_html(result: SuiteResult) -> str:
    return f"<pre style='font-size:12px'>{html.escape(result.table())}</pre>"
