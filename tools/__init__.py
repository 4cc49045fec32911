"""Repository tools (not part of the package)."""
