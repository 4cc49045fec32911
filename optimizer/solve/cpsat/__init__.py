"""solve/cpsat."""
