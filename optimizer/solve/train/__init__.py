"""solve/train."""
