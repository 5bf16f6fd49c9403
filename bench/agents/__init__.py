"""One backend per module: its turns through the daemon against its own SDK or CLI, interleaved
(`python -m bench.agents.<name>`), and its `target()` for the `bench.turns` harness;
`common.py` is what they share."""
