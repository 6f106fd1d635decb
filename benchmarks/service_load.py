"""Load benchmark of `textclf serve`: starts the service as a subprocess on loopback and measures
predictions/s and latency for one client sending one short document at a time, many concurrent clients
(server-side micro-batching), and clients sending batches of documents.

    python -m benchmarks.service_load --db runs.db --model NAME --texts test.jsonl [--clients 50 --requests 200]

Short documents: the first 200 characters of each text in --texts. Every request must succeed (the command
fails otherwise); p50/p99 are per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _run(base: str, model: str, texts: list[str], clients: int, requests: int, per_request: int):
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def one_client(client: httpx.AsyncClient, offset: int) -> None:
        nonlocal errors
        for i in range(requests):
            start = (offset * requests + i) * per_request % max(1, len(texts) - per_request)
            body = {"instances": texts[start:start + per_request]}
            began = time.perf_counter()
            response = await client.post(f"{base}/v1/models/{model}:predict", json=body)
            latencies.append(time.perf_counter() - began)
            errors += response.status_code != 200

    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        began = time.perf_counter()
        await asyncio.gather(*(one_client(client, c) for c in range(clients)))
        wall = time.perf_counter() - began
    latencies.sort()
    return {"docs_per_s": clients * requests * per_request / wall, "requests": len(latencies), "errors": errors,
            "p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", required=True, help="JSONL with a text field")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    texts = [json.loads(line)["text"][:200] for line in open(args.texts, encoding="utf-8")]
    port = _port()
    service = subprocess.Popen([sys.executable, "-m", "textclf", "serve", "--port", str(port), "--db", args.db],
                               env=os.environ.copy())
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/health/live", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        asyncio.run(_run(base, args.model, texts, 1, 50, 1))  # warm up: load the model
        cases = [("1 client, 1 doc per request", 1, 500, 1),
                 (f"{args.clients} clients x {args.requests} requests, 1 doc each", args.clients, args.requests, 1),
                 ("8 clients, 256 docs per request", 8, 20, 256)]
        print("| case | requests | errors | docs/s | p50 ms | p99 ms |")
        print("|---|---:|---:|---:|---:|---:|")
        failed = 0
        for name, clients, requests, per_request in cases:
            r = asyncio.run(_run(base, args.model, texts, clients, requests, per_request))
            failed += r["errors"]
            print(f"| {name} | {r['requests']} | {r['errors']} | {r['docs_per_s']:,.0f} | {r['p50_ms']:.2f} | "
                  f"{r['p99_ms']:.2f} |", flush=True)
    finally:
        service.terminate()
        service.wait(timeout=30)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
