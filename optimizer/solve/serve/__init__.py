"""solve/serve: the serving planner (options → problem → model → explain → validate → plan)."""
