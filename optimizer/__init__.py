"""ccopt: the cheapest GPU cluster that finishes an ML job on time."""

__version__ = "0.1.0"
