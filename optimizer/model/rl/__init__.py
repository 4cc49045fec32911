"""RL post-training (DPO, GRPO, PPO): one step's phases on one or two GPU pools."""
