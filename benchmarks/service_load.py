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
import multiprocessing
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


async def _client_loops(base, model, texts, clients, requests, per_request, first_client):
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
        await asyncio.gather(*(one_client(client, first_client + c) for c in range(clients)))
    return latencies, errors


def _process(job):
    """One client process: waits for the common start time, then runs its share of the clients."""
    start_at, args = job
    time.sleep(max(0.0, start_at - time.time()))
    began = time.time()
    latencies, errors = asyncio.run(_client_loops(*args))
    return latencies, errors, began, time.time()


def _run(base, model, texts, clients, requests, per_request, processes):
    """clients spread over `processes` client processes (one Python client process saturates near
    1,000 requests/s, which would measure the client instead of the service)."""
    processes = max(1, min(processes, clients))
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    firsts = [sum(shares[:i]) for i in range(processes)]
    start_at = time.time() + 1.0
    jobs = [(start_at, (base, model, texts, share, requests, per_request, first)) for share, first in zip(shares, firsts)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.map(_process, jobs)
    latencies = sorted(x for r in results for x in r[0])
    errors = sum(r[1] for r in results)
    wall = max(r[3] for r in results) - min(r[2] for r in results)
    return {"docs_per_s": clients * requests * per_request / wall, "requests": len(latencies), "errors": errors,
            "p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", required=True, help="JSONL with a text field")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1, help="textclf serve --workers")
    parser.add_argument("--processes", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)),
                        help="client processes (default: half the cores, at most 8)")
    args = parser.parse_args()
    texts = [json.loads(line)["text"][:200] for line in open(args.texts, encoding="utf-8")]
    port = _port()
    service = subprocess.Popen([sys.executable, "-m", "textclf", "serve", "--port", str(port), "--db", args.db,
                                "--workers", str(args.workers)], env=os.environ.copy())
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/health/live", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        _run(base, args.model, texts, 4 * args.workers, 20, 1, 1)  # warm up: every worker loads the model
        cases = [("1 client, 1 doc per request", 1, 500, 1),
                 (f"{args.clients} clients x {args.requests} requests, 1 doc each", args.clients, args.requests, 1),
                 ("8 clients, 256 docs per request", 8, 20, 256)]
        print("| case | requests | errors | docs/s | p50 ms | p99 ms |")
        print("|---|---:|---:|---:|---:|---:|")
        failed = 0
        for name, clients, requests, per_request in cases:
            r = _run(base, args.model, texts, clients, requests, per_request, args.processes)
            failed += r["errors"]
            print(f"| {name} | {r['requests']} | {r['errors']} | {r['docs_per_s']:,.0f} | {r['p50_ms']:.2f} | "
                  f"{r['p99_ms']:.2f} |", flush=True)
    finally:
        service.terminate()
        service.wait(timeout=30)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
