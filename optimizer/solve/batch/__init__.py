"""solve/batch."""
