"""The agents of a plan: one agent through the a2a-sdk client, the job's push webhook, and the
daemons `up` starts and `down` stops."""
