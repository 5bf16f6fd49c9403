"""Examples built on a2a-wrapper daemons (not part of the installed package)."""
