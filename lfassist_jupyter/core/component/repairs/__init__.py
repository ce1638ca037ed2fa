"""The zero-call repair rules, one module per kind of mistake (``repair.py`` runs them): ``names``,
``keywords``, ``shapes``, ``collisions``, over the syntax tree of ``tree``."""
