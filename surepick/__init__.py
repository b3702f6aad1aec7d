# surepick: the import namespace that maps the repo's folders (shared_fsm, host, sim, tools,
# firmware) to surepick.<folder>; see pyproject.toml.
__version__ = "0.1.0"
