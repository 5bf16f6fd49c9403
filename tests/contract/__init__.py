"""The contract suite: every backend behaviour tested once, parametrized over every backend."""
