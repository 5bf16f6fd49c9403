"""What a job follows and what its steps hand each other: the plan, prompt templates, step
outputs with their schema checks, and the code changes that go between steps."""
