"""Backwards-compatible re-export: the code moved to ``core/component/extract.py``.

``validation/static.py`` still imports ``_COMPONENT_BASE`` from here until the component
facts move to their own low module; keep this file until then.
"""

from lfassist_jupyter.core.component.extract import (  # noqa: F401
    _COMPONENT_BASE,
    _COMPONENT_CLASS,
    defines_component,
    extract_component_code,
    guess_class_name,
)
