"""nmt's version, in a module of its own so that any layer may name it (what nmt writes down
records it) without importing the public API: nmt.__version__ and the package metadata
(pyproject.toml) read it here."""

__version__ = "0.2.0"
