"""The run itself: a job from start or resume to report, its graph of steps, each step's rounds
and attempts, and the calls to the agents."""
