"""Component validation: static + security phases here, runtime + smoke in a sandboxed worker."""

from lfassist_jupyter.validation.report import FieldSummary, Finding, MissingPackage, ValidationReport
from lfassist_jupyter.validation.static import validate_static

__all__ = ["FieldSummary", "Finding", "MissingPackage", "ValidationReport", "validate_static"]
