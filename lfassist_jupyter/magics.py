"""Backwards-compatible entry point: ``%load_ext lfassist_jupyter.magics`` (the magics live in ``ui/magics.py``)."""

from lfassist_jupyter.ui.magics import AssistMagics, LiveProgress, load_ipython_extension, unload_ipython_extension

__all__ = ["AssistMagics", "LiveProgress", "load_ipython_extension", "unload_ipython_extension"]
