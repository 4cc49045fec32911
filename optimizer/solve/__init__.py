"""CP-SAT planners: single job, batch, serving."""
