"""Load generator, run as its own process: `python -m bench.load URL MODE [options]`.

Modes (each prints one JSON object on stdout):

- `rpc`: `--method SendMessage|SendStreamingMessage`, `--concurrency` clients on keep-alive
  connections for `--warmup` then `--duration` seconds; each request carries a fresh
  messageId. A request counts once its whole reply (every SSE event) has been read.
- `stamps`: `--streams` streaming messages `stamp: N` (the instant backend then sends N text
  deltas, each carrying the backend's `perf_counter_ns` at the moment it yielded it) at
  `--concurrency`; reports the time from each backend event to this client parsing the SSE
  event that carries it (CLOCK_MONOTONIC is shared by processes on one machine).

Used when `wrk` is not installed, and always for `stamps` (wrk cannot look inside events).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import uuid
from typing import Any

import aiohttp

STAMP = re.compile(r"t=(\d+);")


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in [0, 100])."""
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def body(method: str, text: str, n: int) -> bytes:
    message = {"messageId": f"{uuid.uuid4().hex}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return json.dumps(
        {"jsonrpc": "2.0", "id": n, "method": method, "params": {"message": message}}
    ).encode()


HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


async def rpc(args: argparse.Namespace) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    counting = False
    stop = False
    url = f"{args.url}/a2a/jsonrpc"
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=HEADERS) as http:

        async def client(k: int) -> None:
            nonlocal errors
            n = 0
            while not stop:
                n += 1
                started = time.perf_counter()
                async with http.post(url, data=body(args.method, "hello bench", n)) as response:
                    await response.read()
                    ok = response.status == 200
                if counting:
                    latencies.append(time.perf_counter() - started)
                    errors += not ok

        tasks = [asyncio.create_task(client(k)) for k in range(args.concurrency)]
        await asyncio.sleep(args.warmup)
        counting = True
        started = time.perf_counter()
        await asyncio.sleep(args.duration)
        counting = False
        elapsed = time.perf_counter() - started
        stop = True
        await asyncio.gather(*tasks)
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "errors": errors,
        "rps": len(ordered) / elapsed,
        "p50_ms": percentile(ordered, 50) * 1000,
        "p99_ms": percentile(ordered, 99) * 1000,
    }


async def stamps(args: argparse.Namespace) -> dict[str, Any]:
    delays: list[float] = []
    firsts: list[float] = []
    url = f"{args.url}/a2a/jsonrpc"
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(args.streams):
        queue.put_nowait(n)
    async with aiohttp.ClientSession(headers=HEADERS) as http:

        async def client() -> None:
            while not queue.empty():
                n = queue.get_nowait()
                payload = body("SendStreamingMessage", f"stamp:{args.events}", n)
                sent = time.perf_counter_ns()
                first = True
                async with http.post(url, data=payload) as response:
                    async for line in response.content:
                        received = time.perf_counter_ns()
                        if not line.startswith(b"data:"):
                            continue
                        if first:
                            firsts.append((received - sent) / 1e6)
                            first = False
                        event = json.loads(line[5:])["result"]
                        delays.extend(stamp_delays(event, received))

        await asyncio.gather(*(client() for _ in range(args.concurrency)))
    return {**delay_summary(delays), "first_event_p50_ms": percentile(sorted(firsts), 50)}


def stamp_delays(event: dict[str, Any], received_ns: int) -> list[float]:
    """ms from each backend stamp an event carries to `received_ns`."""
    update = event.get("artifactUpdate")
    if update is None:
        return []
    return [
        (received_ns - int(stamp)) / 1e6
        for part in update["artifact"]["parts"]
        for stamp in STAMP.findall(part.get("text", ""))
    ]


def delay_summary(delays: list[float]) -> dict[str, Any]:
    ordered = sorted(delays)
    return {
        "events": len(ordered),
        "p50_ms": percentile(ordered, 50),
        "p99_ms": percentile(ordered, 99),
        "max_ms": ordered[-1] if ordered else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("mode", choices=["rpc", "stamps"])
    parser.add_argument("--method", default="SendMessage")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--events", type=int, default=20)
    args = parser.parse_args()
    result = asyncio.run(rpc(args) if args.mode == "rpc" else stamps(args))
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
