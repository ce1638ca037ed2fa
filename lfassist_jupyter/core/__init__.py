"""The UI-free engine.  Imports neither IPython, traitlets, lfx nor the provider SDKs."""
