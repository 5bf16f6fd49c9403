"""A conversation of the daemon in a terminal: the SDK's interactive loop on the same stored
state (`a2a-wrapper` gives this command as `resumeCommand`).

    python -m wrappers.antigravity.resume --home <antigravity.home> --conversation <id>

It takes the block the daemon left in `home` (endpoint, model, tools; no secrets: keys come
from the environment, e.g. GEMINI_API_KEY), or the `antigravity` block of a config file given
with --config. The daemon should not be running a turn of that conversation at the time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from google.antigravity.utils.interactive import run_interactive_loop

from wrappers.antigravity import options
from wrappers.antigravity.config import AntigravityConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m wrappers.antigravity.resume")
    parser.add_argument("--config", type=Path, help="the daemon's config file (JSON)")
    parser.add_argument("--home", type=Path, help="antigravity.home, when not in the config")
    parser.add_argument("--conversation", required=True, help="the conversation (session) id")
    args = parser.parse_args(argv)
    block: dict[str, object] = {}
    if args.config is not None:
        block = dict(json.loads(args.config.read_text()).get("antigravity") or {})
    elif args.home is not None and options.block_file(args.home).is_file():
        block = dict(json.loads(options.block_file(args.home).read_text()))
    if args.home is not None:
        block["home"] = str(args.home)
    config = AntigravityConfig.model_validate(block)
    asyncio.run(run_interactive_loop(options.agent_config(config, args.conversation, [])))


if __name__ == "__main__":
    main()
