"""One daemon instance on its storage: the storage lock, the records of the agent processes it
starts, and the process hygiene that stops them (at exit, and at the next start when a daemon
was killed). Linux; elsewhere the lock still holds and the rest finds nothing to do."""
