"""inputs/jobs."""
