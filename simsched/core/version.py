"""The package's version, at the bottom of the layers so every module can name it without importing
the ``simsched`` facade (which would be an import cycle); ``simsched.__version__`` re-exports it."""

__version__ = "0.1.0"
