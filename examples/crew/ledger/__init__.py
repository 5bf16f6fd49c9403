"""The record of every job: the job, step and run states with their legal changes, and the
ledger (SQLite, numbered migrations) that is the one owner of all three."""
