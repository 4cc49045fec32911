"""ccopt: the cheapest GPU cluster that finishes an ML job on time."""

__version__ = "0.2.0"  # the package version (pyproject reads it from here)
