"""Every rendering the package makes: HTML and SVG for Jupyter, plain text for a terminal.

Views render; everything else returns data.  Domain objects (``ValidationReport``,
``FlowReport``, ``AssistResult``, ``SuiteResult``...) import nothing from here: ``ui/formats.py``
registers these renderers with IPython's display formatters by name, so ``%load_ext`` stays
fast and no arrow points up.  Nothing here validates, builds, runs or changes what it draws.
The standard library and the domain types they draw at import (markdown-it-py, nh3 and
pygments load on the first answer or code block drawn): the cards render in JupyterLab,
Notebook 7, VS Code (all take text/html) and a terminal (text/plain) without any front-end
extension.

    component  the component report card (``ValidationReport``) and the ``--fix`` card
    result     an ``AssistResult``: component card, flow card, answer
    flow       the flow card, ``FlowReport``'s card, run and verdict lines
    picture    ``flow_picture(flow) -> FlowPicture``: a flow as inline SVG
    stats      ``StatsView`` (``%assist stats``)
    eval       an eval run's table
    markdown   the one Markdown path for model-written text (markdown-it + an allow-list
               sanitiser), highlighted Python
    style      the card box, badges, line colours
"""
