"""Every rendering the package makes: HTML and SVG for Jupyter, Markdown, plain text.

Views render; everything else returns data.  A domain object (``ValidationReport``,
``FlowReport``, ``AssistResult``, ``SuiteResult``...) keeps at most a ``_repr_html_`` that
imports its renderer here lazily, so ``%load_ext`` stays fast and nothing imports in a circle.
Nothing here validates, builds, runs or changes what it draws.  Standard library only (and,
lazily, pygments, which IPython already depends on): the cards render in JupyterLab,
Notebook 7, VS Code (all take text/html) and a terminal (text/plain) without any front-end
extension.

    component  the component report card (``ValidationReport``) and the ``--fix`` card
    result     an ``AssistResult``: component card, flow card, answer
    flow       the flow card, ``FlowReport``'s card, run and verdict lines
    picture    ``flow_picture(flow) -> FlowPicture``: a flow as inline SVG
    stats      ``StatsView`` (``%assist stats``)
    eval       an eval run's table
    markdown   inert model Markdown, unbreakable code fences, highlighted Python
    style      the card box, badges, line colours
"""
