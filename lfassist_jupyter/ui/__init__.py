"""The views: the ``%%assist`` magics and the chat panel, over one ``Workspace`` per kernel."""
