#!/usr/bin/python3
"""The peers: the locks a user would pick instead of corolock, on the same server in the same run.

  run_peers.py <url> --out PART [--store redis|zookeeper|etcd|mysql|postgres] [--quick]
               [--repetitions N] [--peers a,b] [--scenarios hot_key,free_for_all,fairness,...]

--store (default redis) picks the server and its peers (STORE_PEERS; the other stores' locks are
in store_locks.py); rows carry "backend". Off Redis the scenarios are those of the stores'
comparison: uncontended_latency (one thread, 1 x 1), hot_key, fairness and hot_key_waiters
(W = 1000 over 4 processes; a SQL peer needs a connection per waiter, more than the server's
max_connections, so its row says so instead of figures).

Each run starts P worker processes of one peer (node_driver.mjs for redis-semaphore and redlock,
py_driver.py for redis-py), hands them a common start on CLOCK_MONOTONIC, and turns what they
report into rows with the figures lock_bench writes for the same scenario (bench/README.md):
  hot_key       4 x 1, hold 100 µs, turns passed through a ring of pipes (not shared memory: the
                drivers are Node and Python), hand-off = next acquire returned - release returned
  free_for_all  4 x 1 and 4 x 16 (quick: 4 x 16), hold 100 µs, every acquire with a 10 s timeout
  fairness      4 x 8, hold 1 ms, acquire with a 10 s timeout, 6 s (quick 3 s)
--quick: the three peers at their default settings, on fairness only.
Commands per acquisition: redis_cmds_per_op counts what the driver's client sent (its own
counter, like corolock's); redis_calls_per_op is the INFO commandstats difference (which also
counts the calls scripts make inside Redis). Every figure is the median of the repetitions.
Runs with Debian's /usr/bin/python3 (python3-redis for INFO and for the redis-py peer).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def node_version(lib):
    try:
        with open(os.path.join(HERE, "node_modules", lib, "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return None


# id -> (library, driver, settings, what the retry settings are)
PEERS = {
    "redis-semaphore": ("redis-semaphore", "node", {"retryInterval": 10},
                        "Mutex, retryInterval 10 ms (default)"),
    "redis-semaphore_1ms": ("redis-semaphore", "node", {"retryInterval": 1},
                            "Mutex, retryInterval 1 ms (tuned)"),
    "redlock": ("redlock", "node", {"retryDelay": 200, "retryJitter": 100},
                "retryDelay 200 ms, retryJitter 100 ms (defaults), retryCount = 10 s / retryDelay"),
    "redlock_10ms": ("redlock", "node", {"retryDelay": 10, "retryJitter": 5},
                     "retryDelay 10 ms, retryJitter 5 ms (tuned), retryCount = 10 s / retryDelay"),
    "redis-py": ("redis-py", "python", {"sleep": 0.1}, "Lock, sleep 0.1 s (default)"),
    "redis-py_1ms": ("redis-py", "python", {"sleep": 0.001}, "Lock, sleep 1 ms (tuned)"),
}
DEFAULT_PEERS = ["redis-semaphore", "redlock", "redis-py"]

# The other stores' peers (bench/peers/store_locks.py), all run by py_driver.py: what a user of
# each store would pick or write instead. The sleeps are the seeds' 30 ms.
STORE_PEERS = {
    "zookeeper": {
        "kazoo": ("kazoo", "python", {}, "Lock (the Curator recipe): waits on a watch"),
        "kazoo_poll_30ms": ("kazoo", "python", {"sleep": 0.03},
                            "create an ephemeral node; taken: sleep 30 ms, retry"),
    },
    "etcd": {
        "etcd3": ("etcd3", "python", {}, "Lock (defaults: TTL 60 s): a lease and a put-if-absent "
                  "txn per attempt; taken: watch the key once, retry"),
        "etcd3_poll_30ms": ("etcd3", "python", {"sleep": 0.03},
                            "put-if-absent txn on the process's lease; taken: sleep 30 ms, retry"),
    },
    "mysql": {
        "mysql_table_30ms": ("PyMySQL", "python", {"sleep": 0.03},
                             "the seeds' lock table: INSERT on a unique key; taken: sleep 30 ms, retry"),
        "mysql_get_lock": ("PyMySQL", "python", {}, "SELECT GET_LOCK(name, 10): waits on the server"),
    },
    "postgres": {
        "pg_advisory_lock": ("psycopg2", "python", {},
                             "SELECT pg_advisory_lock(key), lock_timeout 10 s: waits on the server"),
    },
}
# peer -> the store_locks.MAKERS entry its workers use
STORE_LIB = {"kazoo": "kazoo", "kazoo_poll_30ms": "kazoo_poll", "etcd3": "etcd3",
             "etcd3_poll_30ms": "etcd3_poll", "mysql_table_30ms": "mysql_table",
             "mysql_get_lock": "mysql_get_lock", "pg_advisory_lock": "pg_advisory_lock"}
for _store, _peers in STORE_PEERS.items():
    PEERS.update(_peers)


def library_version(lib):
    if lib == "redis-py":
        import redis
        return redis.__version__
    for module, name in (("kazoo", "kazoo"), ("etcd3", "etcd3"), ("pymysql", "PyMySQL"),
                         ("psycopg2", "psycopg2")):
        if lib == name:
            try:
                m = __import__(module)
                v = getattr(m, "__version__", None) or getattr(m, "VERSION", None)
                return str(v).split()[0] if v else None  # psycopg2: "2.9.5 (dt dec ...)"
            except ImportError:
                return None
    return node_version(lib)


def driver_command(driver):
    if driver == "node":
        return ["node", os.path.join(HERE, "node_driver.mjs")]
    return ["/usr/bin/python3", os.path.join(HERE, "py_driver.py")]


def available(peer):
    lib, driver, _, _ = PEERS[peer]
    if lib in ("kazoo", "etcd3", "PyMySQL", "psycopg2"):
        return library_version(lib) is not None
    if driver == "node":
        return node_version(lib) is not None and subprocess.run(
            ["node", "--version"], capture_output=True).returncode == 0
    return True


def quantile(sorted_xs, q):
    if not sorted_xs:
        return None
    rank = math.ceil(q * len(sorted_xs))
    return sorted_xs[max(rank, 1) - 1]


def calls(r):
    """INFO commandstats: calls per command (Redis; {} on the other stores)."""
    if r is None:
        return {}
    return {k[len("cmdstat_"):]: v["calls"] for k, v in r.info("commandstats").items()}


seq = 0


def run_once(a, r, peer, scenario, job, P, C, hold_us, warmup_ms, duration_ms, timeout_ms):
    """One run: P driver processes of `peer`; returns the workers' reports and INFO deltas."""
    global seq
    seq += 1
    lib, driver, settings, _ = PEERS[peer]
    lib = STORE_LIB.get(peer, lib)
    name = f"bench:{scenario}:{peer}:{os.getpid()}:{seq}"
    pipes = [os.pipe() for _ in range(P)] if job == "hot_key" else []
    procs = []
    limit = (warmup_ms + duration_ms + timeout_ms) / 1000 + 30
    try:
        for p in range(P):
            cfg = {"url": a.url, "lib": lib, "settings": settings, "job": job, "name": name,
                   "hold_us": hold_us, "warmup_ms": warmup_ms, "duration_ms": duration_ms,
                   "timeout_ms": timeout_ms, "index": p, "processes": P, "coroutines": C}
            fds = ()
            if pipes:
                cfg["pipe_in"], cfg["pipe_out"] = pipes[p][0], pipes[(p + 1) % P][1]
                fds = (cfg["pipe_in"], cfg["pipe_out"])
            procs.append(subprocess.Popen(driver_command(driver) + [json.dumps(cfg)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True, pass_fds=fds, cwd=HERE))
        # Bounded: whatever still runs after the limit is killed (its readline then ends).
        killer = threading.Timer(limit, lambda: [p.kill() for p in procs])
        killer.start()
        try:
            for p in procs:
                if p.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"{peer}: a worker failed before it was ready")
            before = calls(r)
            start = time.monotonic_ns() + 100_000_000
            for p in procs:
                p.stdin.write(f"{start}\n")
                p.stdin.flush()
            reports = []
            for p in procs:
                line = p.stdout.readline()
                if not line:
                    raise RuntimeError(f"{peer}: a worker died (or was killed after {limit:.0f} s)")
                reports.append(json.loads(line))
            after = calls(r)
        finally:
            killer.cancel()
        for p in procs:
            if p.wait(timeout=10) != 0:
                raise RuntimeError(f"{peer}: a worker exited with {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for rd, wr in pipes:
            os.close(rd)
            os.close(wr)
    delta = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
    delta.pop("info", None)
    return reports, delta, start


def common(f, reports, delta, acquisitions, duration_ms):
    opened = [x.get("sessions") for x in reports]  # the Node driver does not say
    f["sessions"] = sum(opened) if None not in opened else None
    f["redis_cmds_per_op"] = sum(x["commands"] for x in reports) / acquisitions if acquisitions else None
    f["redis_calls_per_op"] = sum(delta.values()) / acquisitions if acquisitions else None
    f["evalsha_per_op"] = (delta.get("evalsha", 0) + delta.get("eval", 0)) / acquisitions if acquisitions else None
    f["client_cpu_us_per_op"] = sum(x["cpu_s"] for x in reports) * 1e6 / acquisitions if acquisitions else None
    f["timeouts"] = sum(x["timeouts"] for x in reports)


def latency_figures(reports, delta, duration_ms):
    """uncontended_latency: acquire + release cycles of one thread, nobody else on the lock."""
    cycles = sorted(c for x in reports for c in x["cycles_us"])
    secs = duration_ms / 1000
    f = {"ops": len(cycles), "seconds": secs, "ops_per_s": len(cycles) / secs,
         "p50_us": quantile(cycles, 0.5), "p99_us": quantile(cycles, 0.99),
         "max_us": cycles[-1] if cycles else None}
    common(f, reports, delta, sum(x["acquisitions"] for x in reports), duration_ms)
    return f


def waiters_figures(reports, delta, start, hold_us):
    """hot_key_waiters: W one-shot requests at once; drain = the last release - the common start,
    as lock_bench measures it (each process's threads ask together once all have their lock)."""
    held = sorted(h for x in reports for h in x["held"])
    t0 = start
    W = len(held) + sum(x["timeouts"] for x in reports)
    drain_s = (max(h[1] for h in held) - t0) / 1e9 if held else None
    handoff = sorted((held[k][0] - held[k - 1][1]) / 1000 for k in range(1, len(held)))
    ideal = W * hold_us / 1e6
    f = {"ops": len(held), "seconds": drain_s, "ops_per_s": len(held) / drain_s if drain_s else None,
         "waiters": W, "drain_ms": drain_s * 1000 if drain_s else None, "ideal_ms": ideal * 1000,
         "drain_over_ideal": drain_s / ideal if drain_s and ideal else None,
         "p50_us": quantile(handoff, 0.5), "p99_us": quantile(handoff, 0.99)}
    common(f, reports, delta, len(held), 0)
    return f


def loop_figures(reports, delta, P, C, hold_us, duration_ms):
    window = sum(x["window_acquisitions"] for x in reports)
    acquisitions = sum(x["acquisitions"] for x in reports)
    secs = duration_ms / 1000
    waits = sorted(w for x in reports for w in x["waits_us"])
    f = {"ops": window, "seconds": secs, "ops_per_s": window / secs, "hold_us": hold_us}
    shares = [x["window_acquisitions"] * P / window if window else 0 for x in reports]
    for i, s in enumerate(shares):
        f[f"share_ratio_p{i}"] = s
    f["min_share_ratio"], f["max_share_ratio"] = min(shares), max(shares)
    top = max(n for x in reports for n in x["per_loop"])
    f["max_share"] = top / window if window else None
    f["max_worker_share_ratio"] = top * P * C / window if window else None
    f["p50_us"], f["p99_us"] = quantile(waits, 0.5), quantile(waits, 0.99)
    f["max_us"] = waits[-1] if waits else None
    f["mean_us"] = statistics.fmean(waits) if waits else None
    f["cycle_us"] = secs * 1e6 / window if window else None
    f["wait_p99_limit_us"] = 2 * P * C * f["cycle_us"] if window else None
    common(f, reports, delta, acquisitions, duration_ms)
    return f


def hot_key_figures(reports, delta, start, warmup_ms, duration_ms):
    turns = sorted(t for x in reports for t in x["turns"])  # [global turn, req, acq, rel]
    begin, end = start + warmup_ms * 10**6, start + (warmup_ms + duration_ms) * 10**6
    handoff = sorted((turns[i][2] - turns[i - 1][3]) / 1000 for i in range(1, len(turns))
                     if turns[i][0] == turns[i - 1][0] + 1 and begin <= turns[i][2] < end)
    secs = duration_ms / 1000
    timed = sum(x["timed"] for x in reports)
    f = {"ops": len(handoff), "seconds": secs, "ops_per_s": len(handoff) / secs}
    if handoff:
        f.update(p50_us=quantile(handoff, 0.5), p99_us=quantile(handoff, 0.99), max_us=handoff[-1],
                 mean_us=statistics.fmean(handoff), handoff_mean_us=statistics.fmean(handoff),
                 cycle_us=secs * 1e6 / len(handoff))
    if timed:
        f["hold_actual_us"] = sum(x["hold_us_sum"] for x in reports) / timed
        f["release_us"] = sum(x["release_us_sum"] for x in reports) / timed
        f["limit_ops_per_s"] = 1e6 / (f["hold_actual_us"] + f["release_us"])
        f["of_limit"] = f["ops_per_s"] / f["limit_ops_per_s"]
        f["wakeup_us_est"] = f["release_us"] / 2  # as lock_bench: one way, half the round trip
        f["limit_wake_ops_per_s"] = 1e6 / (f["hold_actual_us"] + 1.5 * f["release_us"])
        f["of_limit_wake"] = f["ops_per_s"] / f["limit_wake_ops_per_s"]
        f["waited_fraction"] = sum(x["waited"] for x in reports) / timed
    common(f, reports, delta, sum(x["acquisitions"] for x in reports), duration_ms)
    return f


def row(name, peer, P, C, reps, extra):
    lib, _, _, retry = PEERS[peer]
    med = {}
    for k in sorted({k for f in reps for k in f}):
        xs = [f[k] for f in reps if isinstance(f.get(k), (int, float))]
        med[k] = statistics.median(xs) if xs else None
    r = {"name": name, "mode": peer, "processes": P, "coroutines": C, "keys": 1}
    for k in ("ops", "seconds", "ops_per_s", "p50_us", "p99_us", "redis_cmds_per_op"):
        r[k] = med.pop(k, None)
    r["repetitions"] = len(reps)
    r.update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in med.items()})
    ops = [f["ops_per_s"] for f in reps if f.get("ops_per_s")]
    if ops:
        r["ops_per_s_spread"] = round(max(ops) / min(ops), 3)
    client = ("ioredis " + str(node_version("ioredis")) if PEERS[peer][1] == "node"
              else "redis-py (threads)" if lib == "redis-py" else f"{lib} (threads)")
    r.update(library=lib, library_version=library_version(lib), retry=retry, client=client,
             loadavg_1m=os.getloadavg()[0], **extra)
    if extra.get("backend", "redis") != "redis":  # statements / requests, not Redis commands
        r["requests_per_op"] = r.pop("redis_cmds_per_op")
        r["redis_cmds_per_op"] = None
        for k in ("redis_calls_per_op", "evalsha_per_op"):
            r.pop(k, None)
    return r


def configs_for(a):
    """[(scenario, job, P, C, hold µs, warm-up ms, window ms, acquire timeout ms)], as lock_bench's."""
    q = a.quick
    if a.store == "redis":
        wanted = (a.scenarios or ("fairness" if q else "hot_key,free_for_all,fairness")).split(",")
    else:
        wanted = (a.scenarios or "uncontended_latency,hot_key,fairness,hot_key_waiters").split(",")
    configs = []
    if "uncontended_latency" in wanted:
        configs.append(("uncontended_latency", "latency", 1, 1, 0, 200 if q else 300, 1000 if q else 2000, 10000))
    if "hot_key" in wanted:
        configs.append(("hot_key", "hot_key", 4, 1, 100, 100 if q else 300, 700 if q else 2000, 10000))
    if "free_for_all" in wanted:
        for C in ([16] if q else [1, 16]):
            configs.append(("free_for_all", "loop", 4, C, 100, 100 if q else 300, 500 if q else 2000, 10000))
    if "fairness" in wanted:
        configs.append(("fairness", "loop", 4, 8, 1000, 200 if q else 500, 3000 if q else 6000, 10000))
    if "hot_key_waiters" in wanted:
        # the bound of lock_bench's waiters (--waiters-limit: 15 s, quick 5 s) on each request
        configs.append(("hot_key_waiters", "waiters", 4, 250, 100, 0, 0, 5000 if q else 15000))
    return configs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--peers", help="comma-separated; default: all (quick: the defaults only)")
    ap.add_argument("--scenarios", help="default: hot_key,free_for_all,fairness (quick: "
                    "fairness); other stores: uncontended_latency,hot_key,fairness,hot_key_waiters")
    ap.add_argument("--store", default="redis", choices=["redis", *STORE_PEERS])
    a = ap.parse_args()
    q = a.quick
    if a.peers:
        peers = a.peers.split(",")
    elif a.store == "redis":
        peers = DEFAULT_PEERS if q else [p for p in PEERS if p not in STORE_LIB]
    else:
        peers = list(STORE_PEERS[a.store])
    missing = [p for p in peers if not available(p)]
    if missing:
        print(f"run_peers: not installed, skipped: {', '.join(missing)} (scripts/deps.sh --bench)")
    peers = [p for p in peers if p not in missing]
    r = None  # the Redis client: INFO and the clean-up
    if a.store == "redis":
        import redis
        r = redis.Redis.from_url(a.url)
    elif a.store == "mysql" and peers:
        sys.path.insert(0, HERE)
        import store_locks
        store_locks.mysql_setup({"url": a.url})
    results, broken, refused = {}, set(), {}
    for rep in range(1, a.repetitions + 1):
        for c in configs_for(a):
            name, job, P, C, hold_us, warmup_ms, duration_ms, timeout_ms = c
            for peer in peers:
                if (peer, name) in broken:
                    continue
                if job == "waiters" and a.store in ("mysql", "postgres"):
                    # Each request waits on a session of its own: P x C = 1000 connections, more than
                    # the server allows (max_connections: MariaDB 151, PostgreSQL 100 by default).
                    refused[(c, peer)] = (f"needs {P * C} connections (one per waiting request); "
                                          "the server's default max_connections is lower")
                    continue
                try:
                    reports, delta, start = run_once(a, r, peer, name, job, P, C, hold_us,
                                                     warmup_ms, duration_ms, timeout_ms)
                except RuntimeError as e:  # a peer that fails costs its rows, not the others'
                    print(f"run_peers: {e}; {peer} {name} skipped from now on", flush=True)
                    broken.add((peer, name))
                    continue
                f = (hot_key_figures(reports, delta, start, warmup_ms, duration_ms) if job == "hot_key"
                     else latency_figures(reports, delta, duration_ms) if job == "latency"
                     else waiters_figures(reports, delta, start, hold_us) if job == "waiters"
                     else loop_figures(reports, delta, P, C, hold_us, duration_ms))
                results.setdefault((c, peer), []).append(f)
                g = lambda k, d=0: "—" if f.get(k) is None else f"{f[k]:.{d}f}"  # noqa: E731
                print(f"  {a.store} {name} {peer} {P}x{C} rep {rep}: {g('ops_per_s')} acq/s, p50 "
                      f"{g('p50_us')} us, p99 {g('p99_us')} us, cmds/acq {g('redis_cmds_per_op', 2)}, "
                      f"share/fair {g('min_share_ratio', 2)}-{g('max_share_ratio', 2)}, timeouts "
                      f"{g('timeouts')}, sessions {g('sessions')}", flush=True)
    with open(a.out, "a") as out:
        for (c, peer), reps in results.items():
            if (peer, c[0]) in broken:
                continue
            name, job, P, C, hold_us, _, _, timeout_ms = c
            extra = {"hold_us": hold_us, "backend": a.store}
            if name == "fairness":
                extra["acquire_timeout_ms"] = timeout_ms
            out.write(json.dumps({"kind": "scenario", "row": row(name, peer, P, C, reps, extra)}) + "\n")
        for (c, peer), why in refused.items():
            name, job, P, C, hold_us, _, _, _ = c
            extra = {"hold_us": hold_us, "backend": a.store, "not_run": why, "waiters": P * C}
            out.write(json.dumps({"kind": "scenario", "row": row(name, peer, P, C, [], extra)}) + "\n")
    if r is not None:
        keys = list(r.scan_iter(match="*bench:*", count=1000))
        for i in range(0, len(keys), 1000):
            r.unlink(*keys[i:i + 1000])


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"run_peers: {e}")
    except Exception as e:  # redis.RedisError and the other stores' client errors
        if type(e).__module__.split(".")[0] in ("redis", "kazoo", "etcd3", "grpc", "pymysql",
                                                "psycopg2"):
            sys.exit(f"run_peers: {e}")
        raise
