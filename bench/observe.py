"""What metrics and tracing cost a SendMessage: the daemon (instant backend, memory store,
warning-level logs) with neither, with `/metrics` only, and with metrics and OpenTelemetry
traces exported by OTLP/HTTP to a sink on 127.0.0.1 (`bench.servers otlp`, which answers every
export at once), so the cost measured is the daemon's own: spans made, batched, encoded and
sent. Runs are interleaved like the protocol series; the number that matters is the server's
CPU time per request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import proc
from bench.protocol import Row, check_answer, instant_config, load

METHOD = "SendMessage"


def servers(workdir: Path, otlp: str) -> list[proc.Server]:
    memory = {"kind": "memory"}
    traced_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "OTEL_SERVICE_NAME": "a2a-wrapper-bench"}
    return [
        proc.daemon(
            "plain",
            workdir,
            instant_config(memory, metrics={"enabled": False}),
            log_level="warning",
        ),
        proc.daemon("metrics", workdir, instant_config(memory), log_level="warning"),
        proc.daemon(
            "metrics+traces",
            workdir,
            instant_config(memory, tracing={"enabled": True}),
            log_level="warning",
            env=traced_env,
        ),
    ]


def run(
    workdir: Path, *, seconds: float, repeats: int, concurrencies: tuple[int, ...]
) -> tuple[list[Row], dict[str, Any]]:
    sink = proc.module("otlp", workdir, "bench.servers", "otlp")
    started: list[proc.Server] = []
    try:
        sink.start()
        for server in servers(workdir, sink.url):
            started.append(server)
            server.start()
        for server in started:
            check_answer(server.name, server.url)
            load(server, METHOD, 16, min(2.0, seconds))  # warm every code path first
        rows = {(s.name, c): Row(s.name, METHOD, c, []) for c in concurrencies for s in started}
        for _ in range(repeats):
            for concurrency in concurrencies:
                for server in started:
                    rows[(server.name, concurrency)].runs.append(
                        load(server, METHOD, concurrency, seconds)
                    )
        facts = {"otlp_sink_cpu_s": sink.cpu_seconds()}
        return list(rows.values()), facts
    finally:
        for server in reversed(started):
            server.stop()
        sink.stop()
