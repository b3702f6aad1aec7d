# surepick.host: everything that runs on a person's computer (see README.md, layout).
# The package's version: pyproject.toml's [project] version, read back by tests/test_packaging.py.
__version__ = "0.1.0"
