"""The component pipeline: generate -> extract -> validate -> repair, one Langflow custom component."""
