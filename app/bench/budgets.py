"""`python -m app bench --only budgets`: what one address's flood costs another visitor of a served page, under the
budgets of app/ui/budgets.py (issue 49, items 2 and 6).

- Page loads: a page load (`GET /`, then `GET /config`) timed alone, then from another address while one address
  keeps 16 connections asking for `/config` over and over (in a process of its own, so its client work does not slow the
  timing process); RUNS runs of LOADS loads each way, the median and the worst, and their ratio.
- Slow readers: one address opens 800 connections to a 5 MB file of the site (incompressible, so its gzip copy is
  as large) and reads nothing; the server's resident memory before, while they are open and after they close, and
  how many were sent a file, refused (429) or left waiting their turn.
"""

from __future__ import annotations

import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.bench.served import ROOT, get, served_app

RUNS = 3
LOADS = 20
ATTACKERS = 16
SLOW_READERS = 800
BIG = "ort/big.wasm"
FLOOD = """
import sys, threading, time
from app.bench.served import get
port, until = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
started = threading.Barrier(int(sys.argv[3]) + 1)
def ask():
    get(port, "127.0.0.1", "/config")
    started.wait()
    while time.monotonic() < until:
        try:
            get(port, "127.0.0.1", "/config")
        except OSError:
            pass
threads = [threading.Thread(target=ask) for _ in range(int(sys.argv[3]))]
[t.start() for t in threads]
started.wait()
print("flooding", flush=True)
[t.join() for t in threads]
"""


def rss_mb(pid: int) -> float:
    """A process's resident memory now (VmRSS), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc")


def page_loads(port: int, source: str, count: int) -> list[float]:
    """Seconds of `count` page loads (GET / then GET /config) from `source`, one after another."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        get(port, source, "/")
        get(port, source, "/config")
        times.append(time.perf_counter() - start)
    return times


def flooded(port: int, run: int) -> dict[str, float]:
    """Page loads alone and under the /config flood, one run; each series from an address of its own (127.0.RUN.2
    and .3), so what is timed is the flood's effect, not a visitor's own rate (app/ui/budgets.py PAGE)."""
    alone = page_loads(port, f"127.0.{run}.2", LOADS)
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(port), "600", str(ATTACKERS)], cwd=ROOT,
                             stdout=subprocess.PIPE)
    try:
        assert flood.stdout is not None and flood.stdout.readline()  # every connection has been answered once
        under = page_loads(port, f"127.0.{run}.3", LOADS)
    finally:
        flood.kill()
        flood.wait()
    return {"alone_median_s": statistics.median(alone), "alone_worst_s": max(alone),
            "flooded_median_s": statistics.median(under), "flooded_worst_s": max(under),
            "median_ratio": statistics.median(under) / statistics.median(alone)}


def slow_readers(port: int, pid: int) -> dict[str, Any]:
    """Server memory with SLOW_READERS never-reading connections to the big file, and what each was answered."""
    before = rss_mb(pid)
    sockets = [never_reading(port, f"/converge-site/{BIG}") for _ in range(SLOW_READERS)]
    deadline = time.monotonic() + 60
    heads: list[bytes] = []
    while time.monotonic() < deadline:
        time.sleep(0.5)  # the bench samples the server as the connections are answered
        heads = [h for h in (peek(s) for s in sockets) if h]
        if len(heads) >= SLOW_READERS - 64:
            break
    during = rss_mb(pid)
    start = time.perf_counter()
    get(port, "127.0.0.2", "/")
    other_s = time.perf_counter() - start
    for s in sockets:
        s.close()
    time.sleep(2)  # the server notices the closed connections
    return {"connections": SLOW_READERS, "rss_before_mb": round(before), "rss_during_mb": round(during),
            "rss_after_mb": round(rss_mb(pid)), "sent_200": heads.count(b"HTTP/1.1 200"),
            "refused_429": heads.count(b"HTTP/1.1 429"), "waiting": SLOW_READERS - len(heads),
            "other_page_load_s": round(other_s, 3)}


def never_reading(port: int, path: str) -> socket.socket:
    """A connection from 127.0.0.1 that asks for `path`, gzip accepted, and then reads nothing (its receive buffer
    kept small, so the server's sends block as soon as they can)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n".encode())
    return s


def peek(s: socket.socket) -> bytes:
    """The start of the server's answer on a never-reading connection (b"" before it answers), read without taking
    it off the connection."""
    s.setblocking(False)
    try:
        return s.recv(12, socket.MSG_PEEK)
    except BlockingIOError:
        return b""
    finally:
        s.setblocking(True)


def bench(runs: int = RUNS) -> dict[str, Any]:
    """The page-load runs (each figure's worst over the runs) and one slow-reader run on one served page."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        (site / "ort").mkdir(parents=True)
        (site / BIG).write_bytes(random.Random(0).randbytes(5 * 2**20))
        (site / "index.html").write_text("<p>site</p>")
        with served_app(site, Path(tmp)) as (port, proc):
            loads = [flooded(port, run) for run in range(1, runs + 1)]
            readers = slow_readers(port, proc.pid)
    worst = {k: round(max(run[k] for run in loads), 4) for k in loads[0]}
    return {"page_loads": {"runs": [{k: round(v, 4) for k, v in run.items()} for run in loads], "worst": worst,
                           "attacker_connections": ATTACKERS, "loads_a_run": LOADS},
            "slow_readers": readers}
