"""The peers' election failover, for scripts/bench.sh --failover beside bench/failover_bench.cpp:
a leader process is killed (SIGKILL), and the figure is how long until a waiting follower in this
process leads, against the session or lease timeout set on both (--timeout-ms, whole seconds).

  kazoo   kazoo's Election (ZooKeeper's election recipe, the one Curator's LeaderLatch follows:
          an ephemeral sequential node, the lowest leads): KazooClient(timeout=T); the leader's
          node goes when the server expires its session.
  etcd3   python-etcd3 0.12 has no election recipe (etcd's own is in the Go client): a user of it
          elects with its Lock (a key on a lease of TTL T), the leader refreshing the lease every
          T/3; the follower's acquire() watches the key and tries again when it goes.

Usage: failover_peer.py URL --store zookeeper|etcd [--rounds N] [--timeout-ms T] [--out FILE]
Each round uses a fresh name, and the kill comes 500 ms plus a random part of the timeout after the
follower campaigns, as in failover_bench; a row as failover_bench's (JSON lines, kind "scenario").
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_locks  # noqa: E402  (etcd3's client with the tenacity shim)


def kazoo_client(url, timeout_s):
    from kazoo.client import KazooClient
    c = KazooClient(hosts=urlparse(url).netloc, timeout=timeout_s)
    c.start(timeout=15)
    return c


def etcd_client(url):
    return store_locks.etcd({"url": url})


def lead(store, url, name, timeout_s):
    """The leader process: leads, says so on stdout, then keeps its leadership until killed."""
    if store == "zookeeper":
        c = kazoo_client(url, timeout_s)

        def leading():
            print("led", flush=True)
            while True:
                time.sleep(3600)
        c.Election("/bench-failover/" + name, "leader").run(leading)
    else:
        lock = etcd_client(url).lock("bench-failover/" + name, ttl=int(timeout_s))
        if not lock.acquire(timeout=None):
            sys.exit("the leader's lock was not acquired")
        print("led", flush=True)
        while True:
            time.sleep(timeout_s / 3)
            lock.refresh()


def follow(store, client, name, timeout_s, led):
    """The follower: waits to lead; `led` holds the moment it does."""
    if store == "zookeeper":
        def leading():
            led.append(time.monotonic())
        client.Election("/bench-failover/" + name, "follower").run(leading)
    else:
        lock = client.lock("bench-failover/" + name, ttl=int(timeout_s))
        if lock.acquire(timeout=timeout_s * 4 + 10):
            led.append(time.monotonic())
            lock.release()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("url")
    p.add_argument("--store", choices=["zookeeper", "etcd"], required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--timeout-ms", type=int, default=3000)
    p.add_argument("--out")
    p.add_argument("--leader", help=argparse.SUPPRESS)  # the leader process: its election's name
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    timeout_s = a.timeout_ms / 1000
    if a.leader:
        return lead(a.store, a.url, a.leader, timeout_s)
    rounds = 3 if a.quick else a.rounds
    client = kazoo_client(a.url, timeout_s) if a.store == "zookeeper" else etcd_client(a.url)
    failovers = []
    rng = random.Random(12345)
    for r in range(rounds):
        name = "f-%d-%d-%s" % (os.getpid(), r, uuid.uuid4().hex[:6])
        leader = subprocess.Popen([sys.executable, os.path.abspath(__file__), a.url, "--store", a.store,
                                   "--timeout-ms", str(a.timeout_ms), "--leader", name],
                                  stdout=subprocess.PIPE, text=True)
        if leader.stdout.readline().strip() != "led":
            leader.kill()
            sys.exit("the leader process ended before it led")
        led = []
        t = threading.Thread(target=follow, args=(a.store, client, name, timeout_s, led), daemon=True)
        t.start()
        time.sleep(0.5 + rng.uniform(0, timeout_s))  # the kill at any phase of the keepalives
        if led:
            sys.exit("the follower led while the leader lived")
        killed = time.monotonic()
        os.kill(leader.pid, signal.SIGKILL)
        leader.wait()
        t.join(timeout_s * 4 + 15)
        if not led:
            sys.exit("the follower did not lead after the kill")
        ms = (led[0] - killed) * 1000
        failovers.append(ms)
        print("failover_peer %s: round %d: %.1f ms" % (a.store, r + 1, ms), file=sys.stderr)
    p50 = statistics.median(failovers)
    row = {"name": "election_failover",
           "mode": "kazoo Election" if a.store == "zookeeper" else "etcd3 Lock (no election recipe)",
           "backend": a.store, "processes": 2, "coroutines": 1, "rounds": rounds,
           "timeout_ms": a.timeout_ms, "failover_min_ms": round(min(failovers), 1),
           "failover_mean_ms": round(statistics.mean(failovers), 1), "failover_p50_ms": round(p50, 1),
           "failover_max_ms": round(max(failovers), 1),
           "failover_vs_timeout": round(p50 / a.timeout_ms, 3)}
    print("%s %s: failover p50 %.1f ms, max %.1f ms over %d rounds (timeout %d ms)"
          % (a.store, row["mode"], p50, max(failovers), rounds, a.timeout_ms))
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps({"kind": "scenario", "row": row}) + "\n")


if __name__ == "__main__":
    main()
