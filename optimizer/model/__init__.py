"""Performance model: memory and step time of a model on a GPU layout (pure functions)."""
