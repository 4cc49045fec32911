"""solve/serve."""
