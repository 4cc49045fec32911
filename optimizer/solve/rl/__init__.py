"""The RL post-training planner: one pool or two, chosen with CP-SAT over priced candidates."""
