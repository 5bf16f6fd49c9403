"""Instructions per SendMessage, counted by valgrind's callgrind: a measure of the daemon's
CPU work that the machine's speed does not move (the same tree gives the same count to about
0.1%, where timed runs on a shared machine differ by 10-15%). It counts user-space instructions
of every thread, so the kernel's part (system calls, context switches) is not in it: read it
beside the timed CPU of `make bench`, not instead of it.

    python -m bench.instructions [--store sqlite|memory] [--requests 400] [--tree DIR]

`--tree` measures another checkout (say `git archive <commit> | tar -x -C DIR`) with this
venv, for an A/B against an older commit. The daemon runs the bench's instant backend with the
bench's log levels (SQLite: info, memory: warning); 200 requests warm it up, then the counters
are zeroed and `--requests` SendMessage calls are made at `--concurrency` clients. Needs
valgrind (Debian: `valgrind`); a run takes about a minute and a half.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.load import HEADERS, body
from bench.proc import REPO
from bench.protocol import instant_config

WARMUP = 200


async def _send(url: str, requests: int, concurrency: int) -> None:
    """`requests` SendMessage calls over `concurrency` keep-alive clients; each must succeed."""
    numbers = itertools.count()
    left = requests

    async def client(http: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            data = body("SendMessage", "hello", next(numbers))
            async with http.post(f"{url}/a2a/jsonrpc", data=data) as reply:
                answer = await reply.json()
                if reply.status != 200 or "result" not in answer:
                    raise RuntimeError(f"SendMessage failed: {reply.status} {answer}")

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=HEADERS) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))


def _control(pid: int, command: str) -> None:
    subprocess.run(["callgrind_control", command, str(pid)], check=True, capture_output=True)  # noqa: S603, S607 - fixed arguments


def measure(tree: Path, store: str, requests: int, concurrency: int) -> float:
    """Instructions per request of the daemon in `tree` with `store`."""
    work = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    try:
        kind = (
            {"kind": "sqlite", "path": str(work / "d.db")}
            if store == "sqlite"
            else {"kind": "memory"}
        )
        config = work / "daemon.json"
        config.write_text(json.dumps(instant_config(kind)))
        out = work / "callgrind.out"
        level = "info" if store == "sqlite" else "warning"
        argv = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no",
            sys.executable, "-m", "core.cli", "serve", str(config), "--port", "0",
            "--log-level", level,
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(tree)}
        with (work / "daemon.log").open("w") as log:
            daemon = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=log, text=True
            )
        try:
            line = daemon.stdout.readline() if daemon.stdout is not None else ""
            if "http://" not in line:
                raise RuntimeError(f"the daemon did not start: see {work / 'daemon.log'}")
            url = line.split()[-1].rstrip("/")
            asyncio.run(_send(url, WARMUP, concurrency))
            _control(daemon.pid, "--zero")
            asyncio.run(_send(url, requests, concurrency))
            _control(daemon.pid, "--dump")
            time.sleep(0.5)
        finally:
            daemon.terminate()
            daemon.wait(60)
        # callgrind.out.1: the dump asked for after the measured requests (what ran since the
        # zeroing); callgrind.out: what ran after it, written at exit.
        return _instructions(work / "callgrind.out.1") / requests
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _instructions(dump: Path) -> int:
    """The `summary:` (or `totals:`) line of the dump made after the zeroing."""
    for line in dump.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no instruction count in {dump}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tree", type=Path, default=REPO)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    per_request = measure(args.tree.resolve(), args.store, args.requests, args.concurrency)
    print(f"{args.tree} {args.store}: {per_request / 1e6:.3f} M instructions per SendMessage")


if __name__ == "__main__":
    main()
