"""`python -m bench [--quick] [--only SERIES,...] [--json FILE]`: every series, one table.

Series: protocol (daemon vs bare aiohttp vs a2a-sdk server), stream (backend event -> SSE
client), state (100,000 tasks and sessions), turns (real backends vs direct, when merged),
observe (what metrics and tracing cost a SendMessage), replicas (1-3 daemons on one
PostgreSQL beside the SQLite single daemon; cross-replica event latency), sandbox (what
`sandbox.mode: bubblewrap` adds to a Claude Code turn, first and warm), console (the console's
index with 1,000 stored tasks, server time).
`--quick` is a smoke run of the harness (well under 2 minutes); its numbers mean little.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import console, observe, protocol, replicas, sandbox, state, streaming, turns

SERIES = ("protocol", "stream", "state", "turns", "observe", "replicas", "sandbox", "console")


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    wrk = shutil.which("wrk")
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "loadavg_at_start": os.getloadavg(),
        "client": _wrk_version(wrk) if wrk else "bench.load (aiohttp)",
    }


def _wrk_version(wrk: str) -> str:
    out = subprocess.run([wrk, "-v"], capture_output=True, text=True, check=False)  # noqa: S603 - fixed argument list
    return out.stdout.split("\n")[0]


def print_protocol(rows: list[protocol.Row], facts: dict[str, Any]) -> None:
    print(
        f"\n## Protocol overhead (client: {facts['client']}; medians of {len(rows[0].runs)} runs)"
    )
    head = (
        f"{'method':<22}{'c':>3} {'server':<11}{'req/s':>8}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'CPU us/req':>11}{'x bare':>8}{'x sdk':>7}"
    )
    print(head)
    index = {(r.server, r.method, r.concurrency): r for r in rows}
    for r in rows:
        bare, sdk = (
            index[("bare", r.method, r.concurrency)],
            index[("sdk", r.method, r.concurrency)],
        )
        rps = r.median("rps")
        print(
            f"{r.method:<22}{r.concurrency:>3} {r.server:<11}{rps:>8.0f}{r.median('p50_ms'):>9.2f}"
            f"{r.median('p99_ms'):>9.2f}{r.median('cpu_us'):>11.0f}{rps / bare.median('rps'):>8.2f}"
            f"{rps / sdk.median('rps'):>7.2f}"
        )
    rss = {
        k.removesuffix("_rss_idle_mib"): v for k, v in facts.items() if k.endswith("_rss_idle_mib")
    }
    print(
        "RSS MiB idle/peak: "
        + ", ".join(f"{k} {v:.0f}/{facts[k + '_rss_peak_mib']:.0f}" for k, v in rss.items())
    )


def print_stream(out: dict[str, Any]) -> None:
    print(
        "\n## Streaming latency (backend event -> SSE client), "
        f"{out['events_per_stream']} events per stream"
    )
    for key, value in out.items():
        if key.startswith("c"):
            print(
                f"concurrency {key[1:]:>3}: p50 {value['p50_ms']:.2f} ms  "
                f"p99 {value['p99_ms']:.2f} ms"
                f"  max {value['max_ms']:.2f} ms  ({value['events']} events; first event p50 "
                f"{value['first_event_p50_ms']:.2f} ms)"
            )


def print_state(out: dict[str, Any]) -> None:
    print(
        f"\n## Scale of state: {out['n']:,} tasks + {out['n']:,} sessions, "
        f"SQLite {out['disk_mib']:.1f} MiB on disk"
    )
    for key in ("task_get", "session_get"):
        v = out[key]
        print(
            f"store {key:<12} p50 {v['p50_ms']:.3f} ms  p99 {v['p99_ms']:.3f} ms  "
            f"loop stall {v['stall_ms']:.1f} ms"
        )
    for key in ("session_sweep", "task_purge"):
        v = out[key]
        print(
            f"{key:<18} removed {v['removed']:,} in {v['seconds']:.2f} s  "
            f"longest loop stall {v['stall_ms']:.1f} ms"
        )
    g = out["daemon_get_task"]
    print(f"daemon GetTask over HTTP: p50 {g['p50_ms']:.2f} ms  p99 {g['p99_ms']:.2f} ms")
    for c in (16, 64):
        v = out[f"daemon_send_c{c}"]
        print(
            f"daemon SendMessage c={c} on the full store: {v['rps']:.0f} req/s  "
            f"p99 {v['p99_ms']:.1f} ms"
        )
    print(
        f"daemon RSS idle {out['daemon_rss_idle_mib']:.0f} MiB, "
        f"peak under load {out['daemon_rss_load_mib']:.0f} MiB"
    )


def print_observe(rows: list[protocol.Row]) -> None:
    print(f"\n## Metrics and tracing on SendMessage (medians of {len(rows[0].runs)} runs)")
    print(f"{'c':>3} {'daemon':<16}{'req/s':>8}{'p50 ms':>9}{'CPU us/req':>11}{'x plain':>9}")
    plain = {r.concurrency: r.median("cpu_us") for r in rows if r.server == "plain"}
    for r in rows:
        cpu = r.median("cpu_us")
        print(
            f"{r.concurrency:>3} {r.server:<16}{r.median('rps'):>8.0f}{r.median('p50_ms'):>9.2f}"
            f"{cpu:>11.0f}{cpu / plain[r.concurrency]:>9.2f}"
        )


def print_turns(out: dict[str, Any]) -> None:
    print("\n## Agent turns (ms, medians; ratio = through the daemon / direct)")
    for name, v in out.items():
        if "skipped" in v:
            print(f"{name:<9} skipped: {v['skipped']}")
            continue
        print(
            f"{name:<9} first {v['first']:.0f} "
            f"(direct {v['direct_first']:.0f}, x{v['first_ratio']:.2f})"
            f"  warm {v['warm']:.0f} (x{v['warm_ratio']:.2f})  cold {v['cold']:.0f} "
            f"(direct {v['direct_follow']:.0f}, x{v['cold_ratio']:.2f})"
        )


def print_replicas(out: dict[str, Any]) -> None:
    print(
        f"\n## Replicas on one PostgreSQL (SendMessage, instant backend, c={out['concurrency']} "
        "in all, spread over the replicas)"
    )
    for key in ("sqlite_1", "postgres_1", "postgres_2", "postgres_3"):
        v = out[key]
        print(
            f"{key:<11} {v['rps']:>8.0f} req/s  p50 {v['p50_ms']:.2f} ms  p99 {v['p99_ms']:.2f} ms"
        )
    v = out["cross_replica"]
    print(
        f"cross-replica event latency (owner's backend -> subscriber on another replica): "
        f"p50 {v['p50_ms']:.2f} ms  p99 {v['p99_ms']:.2f} ms  max {v['max_ms']:.2f} ms "
        f"({v['events']} events)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run of the harness")
    parser.add_argument("--only", default=",".join(SERIES), help="comma-separated series")
    parser.add_argument("--seconds", type=float, help="per load run (default 5; quick 1)")
    parser.add_argument("--repeats", type=int, help="runs per cell (default 3; quick 1)")
    parser.add_argument("--n", type=int, help="stored tasks and sessions (default 100000)")
    parser.add_argument("--json", type=Path, help="also write every number here")
    args = parser.parse_args()
    quick = args.quick
    only = [s for s in args.only.split(",") if s]
    results: dict[str, Any] = {"machine": machine(), "quick": quick}
    print(json.dumps(results["machine"]))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="a2a-bench-") as tmp:
        work = Path(tmp)
        if "protocol" in only:
            rows, facts = protocol.run(
                work / "protocol",
                seconds=args.seconds or (1 if quick else 5),
                repeats=args.repeats or (1 if quick else 3),
                concurrencies=(1, 16) if quick else (1, 16, 64),
            )
            results["protocol"] = {
                "facts": facts,
                "rows": [
                    {
                        "server": r.server,
                        "method": r.method,
                        "concurrency": r.concurrency,
                        "runs": [run.__dict__ for run in r.runs],
                    }
                    for r in rows
                ],
            }
            print_protocol(rows, facts)
        if "stream" in only:
            results["stream"] = streaming.run(
                work / "stream",
                streams=20 if quick else 200,
                events=20,
                concurrencies=(1, 16),
            )
            print_stream(results["stream"])
        if "state" in only:
            results["state"] = state.run(
                work / "state",
                n=args.n or (5000 if quick else 100_000),
                load_seconds=1 if quick else 5,
            )
            print_state(results["state"])
        if "turns" in only:
            results["turns"] = turns.run(work / "turns", rounds=1 if quick else 3)
            print_turns(results["turns"])
        if "observe" in only:
            observed, facts = observe.run(
                work / "observe",
                seconds=args.seconds or (1 if quick else 5),
                repeats=args.repeats or (1 if quick else 3),
                concurrencies=(1, 16),
            )
            results["observe"] = {
                "facts": facts,
                "rows": [
                    {
                        "server": r.server,
                        "concurrency": r.concurrency,
                        "runs": [x.__dict__ for x in r.runs],
                    }
                    for r in observed
                ],
            }
            print_observe(observed)
        if "replicas" in only:
            results["replicas"] = replicas.run(
                work / "replicas",
                seconds=args.seconds or (1 if quick else 5),
                streams=10 if quick else 100,
                events=20,
            )
            print_replicas(results["replicas"])
        if "sandbox" in only:
            print()
            asyncio.run(sandbox.run(contexts=2 if quick else 5, follow_ups=1 if quick else 3))
        if "console" in only:
            results["console"] = asyncio.run(
                console.measure(tasks=200 if quick else 1000, contexts=50, loads=5 if quick else 20)
            )
            print("\n## Console\n" + console.summary(results["console"]))
    results["loadavg_at_end"] = os.getloadavg()
    print(
        f"\ndone in {time.perf_counter() - started:.0f} s; "
        f"load average at end {results['loadavg_at_end']}"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
