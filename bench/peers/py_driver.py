#!/usr/bin/python3
"""One worker process of a Python peer, run by bench/peers/run_peers.py: redis-py's Lock
(redis.lock.Lock), or one of the other stores' peers (store_locks.py: kazoo, etcd3, PyMySQL,
psycopg2).

The same protocol as node_driver.mjs: argv[1] JSON settings; "ready" on stdout once connected;
the common start (CLOCK_MONOTONIC ns, which time.monotonic_ns reads) on stdin; one JSON line of
results at the end. C threads stand for C coroutines (every lock here is blocking). Jobs: hot_key
(turns through a ring of pipes), loop (free_for_all, fairness), latency (one thread, acquire +
release cycles, nobody else), waiters (C one-shot requests at once, each holding once).
"""
import json
import os
import sys
import threading
import time

cfg = json.loads(sys.argv[1])
now = time.monotonic_ns

if cfg["lib"] == "redis-py":
    import redis

    class Counting(redis.Redis):
        """Counts every command sent (Lock's SET and its release script go through here)."""
        n = 0
        n_lock = threading.Lock()

        def execute_command(self, *args, **options):
            with Counting.n_lock:
                Counting.n += 1
            return super().execute_command(*args, **options)

    client = Counting.from_url(cfg["url"])

    def sent():
        return Counting.n

    def sessions():
        return client.connection_pool._created_connections

    def make_lock(name):
        return client.lock(name, timeout=30, sleep=cfg["settings"]["sleep"],
                           blocking_timeout=cfg["timeout_ms"] / 1000)
else:
    import store_locks
    make_lock, sent, sessions = store_locks.factory(cfg)


res = {"acquisitions": 0, "window_acquisitions": 0, "timeouts": 0, "per_loop": [0] * cfg["coroutines"],
       "waits_us": [], "turns": [], "hold_us_sum": 0.0, "release_us_sum": 0.0, "timed": 0, "waited": 0,
       "cycles_us": [], "held": []}
guard = threading.Lock()


def hold():
    if cfg["hold_us"] > 0:
        time.sleep(cfg["hold_us"] / 1e6)


def latency(c, t):
    """Acquire + release cycles on a lock nobody else wants; cycles started in the window count."""
    lk = make_lock(cfg["name"])
    while True:
        t0 = now()
        if t0 >= t["end"]:
            return
        if not lk.acquire():
            res["timeouts"] += 1
            continue
        lk.release()
        if t["begin"] <= t0:
            res["cycles_us"].append((now() - t0) / 1000)
            res["window_acquisitions"] += 1
        res["acquisitions"] += 1


def one_waiter(c, t, gate):
    """One request, once: (acquired, released) ns."""
    lk = make_lock(cfg["name"])
    gate.wait()
    ok = lk.acquire()
    if not ok:
        with guard:
            res["timeouts"] += 1
        return
    acquired = now()
    hold()
    lk.release()
    with guard:
        res["held"].append([acquired, now()])
        res["acquisitions"] += 1


def loop(c, t):
    lk = make_lock(cfg["name"])
    while True:
        asked = now()
        if asked >= t["end"]:
            return
        ok = lk.acquire()
        got = now()
        with guard:
            if t["begin"] <= asked < t["end"]:
                res["waits_us"].append((got - asked) / 1000)
            if not ok:
                res["timeouts"] += 1
                continue
            if t["begin"] <= got < t["end"]:
                res["window_acquisitions"] += 1
                res["per_loop"][c] += 1
        hold()
        lk.release()
        with guard:
            res["acquisitions"] += 1


# ---- hot_key turns: a ring of pipes (byte 1 = the next turn is yours, byte 0 = stop) ---------
ring = threading.Condition()
state = {"received": 1 if cfg["index"] == 0 else 0, "stopped": False}


def pass_turn(byte):
    os.write(cfg["pipe_out"], bytes([byte]))


def stop_ring():
    with ring:
        if not state["stopped"]:
            state["stopped"] = True
            pass_turn(0)
        ring.notify_all()


def listen():
    while True:
        data = os.read(cfg["pipe_in"], 64)
        if not data:
            return
        for b in data:
            if b == 0:
                stop_ring()
                return
            with ring:
                state["received"] += 1
                ring.notify_all()


def hot_key(c, t):
    lk = make_lock(cfg["name"])
    k = c
    while True:
        with ring:
            ring.wait_for(lambda: state["stopped"] or state["received"] > k, timeout=60)
            if state["stopped"] or state["received"] <= k:
                return
        requested = now()
        sent0 = sent()
        ok = lk.acquire()
        waited = sent() - sent0 > getattr(lk, "requests_free", 1)  # more than a free lock costs
        if not ok:
            res["timeouts"] += 1
            stop_ring()
            return
        acquired = now()
        last = acquired >= t["end"]
        if last:
            stop_ring()
        else:
            pass_turn(1)
        hold()
        releasing = now()
        lk.release()
        released = now()
        with guard:
            res["acquisitions"] += 1
            res["turns"].append([k * cfg["processes"] + cfg["index"], requested, acquired, released])
            if t["begin"] <= acquired < t["end"]:
                res["window_acquisitions"] += 1
                res["hold_us_sum"] += (releasing - acquired) / 1000
                res["release_us_sum"] += (released - releasing) / 1000
                res["timed"] += 1
                res["waited"] += int(waited)
        if last:
            return
        k += cfg["coroutines"]


def main():
    warm = make_lock(f"{cfg['name']}:warm:{cfg['index']}")
    if not warm.acquire():
        sys.exit("warm-up acquire failed")
    warm.release()
    if hasattr(warm, "close"):  # a SQL peer's own connection
        warm.close()
    if cfg["job"] == "hot_key":
        threading.Thread(target=listen, daemon=True).start()
    print("ready", flush=True)
    start = int(sys.stdin.readline())
    t = {"begin": start + cfg["warmup_ms"] * 10**6,
         "end": start + (cfg["warmup_ms"] + cfg["duration_ms"]) * 10**6}
    time.sleep(max(0, (start - now()) / 1e9))
    sent0, cpu0 = sent(), os.times()
    if cfg["job"] == "waiters":
        # Every request's lock (and connection) made before the start; they ask at once.
        gate = threading.Barrier(cfg["coroutines"], action=lambda: res.__setitem__("gate_ns", now()))
        threads = [threading.Thread(target=one_waiter, args=(c, t, gate)) for c in range(cfg["coroutines"])]
    else:
        run = {"hot_key": hot_key, "loop": loop, "latency": latency}[cfg["job"]]
        threads = [threading.Thread(target=run, args=(c, t)) for c in range(cfg["coroutines"])]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    cpu = os.times()
    res["commands"] = sent() - sent0
    res["sessions"] = sessions()
    res["cpu_s"] = (cpu.user - cpu0.user) + (cpu.system - cpu0.system)
    print(json.dumps(res), flush=True)


main()
