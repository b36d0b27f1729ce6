"""The peers of the other stores: the locks a user of ZooKeeper, etcd, MariaDB or PostgreSQL would write
or pick instead of corolock, for py_driver.py (which runs them as it runs redis-py's Lock).

factory(cfg) -> (make_lock, sent, sessions): make_lock(name) gives an object with acquire() -> bool
(waits at most cfg["timeout_ms"]) and release(); sent() counts the statements or requests sent
(0 where the library does not say); sessions() the connections opened so far.

  kazoo             kazoo's Lock (the Curator recipe: ephemeral sequential node, watch the
                    predecessor), on one KazooClient per process shared by its threads
  kazoo_poll_30ms   kazoo: create an ephemeral node at the lock's path; if it exists, sleep 30 ms
                    and try again; release = delete (the naive ZooKeeper lock)
  etcd3             python-etcd3's Lock (etcd3.Lock, defaults: TTL 60 s): per attempt a lease grant
                    and a put-if-absent txn; taken: watch the key once (any event), try again;
                    release = delete if the value is ours; one etcd3 client per process
  etcd3_poll_30ms   etcd3: put-if-absent txn (put_if_not_exists) of the lock's key on the process's
                    lease; taken: sleep 30 ms and try again; release = delete if the value is ours
  mysql_table_30ms  the seeds' lock table: INSERT (name, owner) on a unique key; a duplicate key
                    means taken: sleep 30 ms, retry; release = DELETE ... WHERE name AND owner
  mysql_get_lock    a plain GET_LOCK loop: SELECT GET_LOCK(name, timeout) waits on the server;
                    release = RELEASE_LOCK(name)
  pg_advisory_lock  SELECT pg_advisory_lock(key) with lock_timeout = the timeout; release =
                    pg_advisory_unlock(key); the key is the name's hash (64 bits)
SQL peers hold one connection per lock object, i.e. per thread (a server-side wait and the lock
itself belong to a session), autocommit on.
"""
import hashlib
import threading
import time
import uuid
from urllib.parse import urlparse

counter = {"sent": 0, "sessions": 0}  # sessions: opened and not closed by close()
counter_lock = threading.Lock()


def count(key, n=1):
    with counter_lock:
        counter[key] += n


def sent():
    return counter["sent"]


def sessions():
    return counter["sessions"]


def poll_until(deadline, attempt, interval):
    """attempt() until it says True or the deadline would pass during the next sleep."""
    while True:
        if attempt():
            return True
        if time.monotonic() + interval > deadline:
            return False
        time.sleep(interval)


# ---- ZooKeeper ---------------------------------------------------------------------------------

zk_client = None


def zk(cfg):
    global zk_client
    if zk_client is None:
        from kazoo.client import KazooClient
        u = urlparse(cfg["url"])
        zk_client = KazooClient(hosts=u.netloc, timeout=10)
        zk_client.start(timeout=15)
        count("sessions")
    return zk_client


def zk_path(name):
    return "/bench-peers/" + name.replace("/", "_")


class KazooLock:
    def __init__(self, cfg, name):
        self.lock = zk(cfg).Lock(zk_path(name), uuid.uuid4().hex)
        self.timeout = cfg["timeout_ms"] / 1000

    def acquire(self):
        count("sent")
        try:
            return self.lock.acquire(blocking=True, timeout=self.timeout)
        except Exception as e:  # kazoo's LockTimeout
            if type(e).__name__ == "LockTimeout":
                return False
            raise

    def release(self):
        count("sent")
        self.lock.release()


class KazooPollLock:
    def __init__(self, cfg, name, interval):
        self.client = zk(cfg)
        self.path = zk_path(name) + "-poll"
        self.timeout = cfg["timeout_ms"] / 1000
        self.interval = interval
        self.client.ensure_path("/bench-peers")

    def _try(self):
        from kazoo.exceptions import NodeExistsError
        count("sent")
        try:
            self.client.create(self.path, b"", ephemeral=True)
            return True
        except NodeExistsError:
            return False

    def acquire(self):
        return poll_until(time.monotonic() + self.timeout, self._try, self.interval)

    def release(self):
        count("sent")
        self.client.delete(self.path)


# ---- etcd ---------------------------------------------------------------------------------------

etcd_client = None
etcd_lease = None  # etcd3_poll's keys: one lease per process, as kazoo's one session
etcd_lease_lock = threading.Lock()


class CountingStub:
    """A gRPC stub whose every unary call counts as a request sent (sent())."""

    def __init__(self, stub):
        self.stub = stub

    def __getattr__(self, name):
        call = getattr(self.stub, name)

        def counted(*args, **kwargs):
            count("sent")
            return call(*args, **kwargs)
        return counted


class Tenacity8Shim:
    """etcd3 0.12.0's Lock.acquire gives tenacity a wait(previous_attempt_number,
    delay_since_first_attempt) callback, a form tenacity accepted before 8.0; Debian 12 has
    tenacity 8.2, which calls wait(retry_state), so the first acquire that finds the lock taken
    raises TypeError (kragniz/python-etcd3 issue 2149). etcd3.locks sees tenacity through this:
    the old form adapted as tenacity < 8 did, the rest untouched — the library's own loop runs."""

    def __init__(self, tenacity):
        self.tenacity = tenacity

    def __getattr__(self, name):
        return getattr(self.tenacity, name)

    def retry(self, *args, wait=None, **kwargs):
        import inspect
        if wait is not None and len(inspect.signature(wait).parameters) == 2:
            old = wait
            wait = lambda state: old(state.attempt_number, state.seconds_since_start)  # noqa: E731
        return self.tenacity.retry(*args, wait=wait, **kwargs)


def etcd(cfg):
    """The process's etcd3 client (one gRPC channel: one HTTP/2 connection), shared by its threads;
    its requests counted: unary calls (lease grants, txns) and watch creates and cancels."""
    global etcd_client
    if etcd_client is None:
        import etcd3
        import etcd3.locks
        if not isinstance(etcd3.locks.tenacity, Tenacity8Shim):
            etcd3.locks.tenacity = Tenacity8Shim(etcd3.locks.tenacity)
        u = urlparse(cfg["url"])
        c = etcd3.client(host=u.hostname, port=u.port or 2379, timeout=10)
        c.kvstub, c.leasestub = CountingStub(c.kvstub), CountingStub(c.leasestub)
        add, cancel = c.watcher.add_callback, c.watcher.cancel
        c.watcher.add_callback = lambda *a, **k: (count("sent"), add(*a, **k))[1]
        c.watcher.cancel = lambda *a, **k: (count("sent"), cancel(*a, **k))[1]
        c.status()  # connected, or it throws
        etcd_client = c
        count("sessions")
    return etcd_client


class Etcd3Lock:
    requests_free = 2  # a free lock: its lease grant and the txn (py_driver's waited_fraction)

    def __init__(self, cfg, name):
        self.lock = etcd(cfg).lock("bench-peers/" + name)  # its key: /locks/bench-peers/<name>
        self.timeout = cfg["timeout_ms"] / 1000

    def acquire(self):
        return self.lock.acquire(timeout=self.timeout)

    def release(self):
        if not self.lock.release():
            raise RuntimeError("etcd3.Lock: the lock was not ours any more")


class Etcd3PollLock:
    def __init__(self, cfg, name, interval):
        global etcd_lease
        self.client = etcd(cfg)
        with etcd_lease_lock:  # the first lock of the process grants it (60 s: longer than a run)
            if etcd_lease is None:
                etcd_lease = self.client.lease(60)
        self.key = "/bench-peers/" + name + "-poll"
        self.owner = uuid.uuid4().hex.encode()
        self.timeout = cfg["timeout_ms"] / 1000
        self.interval = interval

    def _try(self):
        return self.client.put_if_not_exists(self.key, self.owner, lease=etcd_lease)

    def acquire(self):
        return poll_until(time.monotonic() + self.timeout, self._try, self.interval)

    def release(self):
        t = self.client.transactions
        ok, _ = self.client.transaction(compare=[t.value(self.key) == self.owner],
                                        success=[t.delete(self.key)], failure=[])
        if not ok:
            raise RuntimeError("etcd polling lock: the lock was not ours any more")


# ---- MariaDB / MySQL ---------------------------------------------------------------------------

def mysql_connect(cfg):
    import pymysql
    u = urlparse(cfg["url"])
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                           password=u.password or "", autocommit=True)
    count("sessions")
    return conn


def mysql_setup(cfg):
    """The lock table of the seeds (run once by run_peers.py before the workers)."""
    conn = mysql_connect(cfg)
    with conn.cursor() as c:
        c.execute("CREATE DATABASE IF NOT EXISTS bench_peers")
        c.execute("CREATE TABLE IF NOT EXISTS bench_peers.locks (name VARCHAR(190) PRIMARY KEY, "
                  "owner VARCHAR(64) NOT NULL) ENGINE=InnoDB")
    conn.close()


class SqlLock:
    def close(self):
        """The warm-up lock's connection: closed, so that sessions() counts the measured ones."""
        self.conn.close()
        count("sessions", -1)


class MysqlTableLock(SqlLock):
    def __init__(self, cfg, name, interval):
        self.conn = mysql_connect(cfg)
        self.name, self.owner = name, uuid.uuid4().hex
        self.timeout = cfg["timeout_ms"] / 1000
        self.interval = interval

    def _try(self):
        import pymysql
        count("sent")
        try:
            with self.conn.cursor() as c:
                c.execute("INSERT INTO bench_peers.locks (name, owner) VALUES (%s, %s)",
                          (self.name, self.owner))
            return True
        except pymysql.err.IntegrityError:  # 1062: duplicate key, someone holds it
            return False
        except pymysql.err.OperationalError as e:
            if e.args[0] == 1213:  # InnoDB's deadlock among racing INSERTs of one key: try again
                return False
            raise

    def acquire(self):
        return poll_until(time.monotonic() + self.timeout, self._try, self.interval)

    def release(self):
        count("sent")
        with self.conn.cursor() as c:
            c.execute("DELETE FROM bench_peers.locks WHERE name = %s AND owner = %s",
                      (self.name, self.owner))
            if c.rowcount != 1:
                raise RuntimeError("lock table: the lock was not ours any more")


class MysqlGetLock(SqlLock):
    def __init__(self, cfg, name):
        self.conn = mysql_connect(cfg)
        self.name = "bench:" + hashlib.sha1(name.encode()).hexdigest()  # <= 64 characters
        self.timeout = cfg["timeout_ms"] / 1000

    def acquire(self):
        count("sent")
        with self.conn.cursor() as c:
            c.execute("SELECT GET_LOCK(%s, %s)", (self.name, self.timeout))
            return c.fetchone()[0] == 1

    def release(self):
        count("sent")
        with self.conn.cursor() as c:
            c.execute("SELECT RELEASE_LOCK(%s)", (self.name,))
            if c.fetchone()[0] != 1:
                raise RuntimeError("GET_LOCK: the lock was not ours any more")


# ---- PostgreSQL --------------------------------------------------------------------------------

class PgAdvisoryLock(SqlLock):
    def __init__(self, cfg, name):
        import psycopg2
        u = urlparse(cfg["url"])
        self.conn = psycopg2.connect(host=u.hostname, port=u.port or 5432,
                                     user=u.username or "postgres",
                                     dbname=(u.path or "/postgres").lstrip("/") or "postgres")
        self.conn.autocommit = True
        count("sessions")
        self.key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
        with self.conn.cursor() as c:
            c.execute("SET lock_timeout = %s", (f"{cfg['timeout_ms']}ms",))

    def acquire(self):
        import psycopg2.errors
        count("sent")
        try:
            with self.conn.cursor() as c:
                c.execute("SELECT pg_advisory_lock(%s)", (self.key,))
            return True
        except psycopg2.errors.LockNotAvailable:  # lock_timeout passed
            return False

    def release(self):
        count("sent")
        with self.conn.cursor() as c:
            c.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            if not c.fetchone()[0]:
                raise RuntimeError("pg_advisory_lock: the lock was not ours any more")


MAKERS = {
    "kazoo": lambda cfg, name: KazooLock(cfg, name),
    "kazoo_poll": lambda cfg, name: KazooPollLock(cfg, name, cfg["settings"]["sleep"]),
    "etcd3": lambda cfg, name: Etcd3Lock(cfg, name),
    "etcd3_poll": lambda cfg, name: Etcd3PollLock(cfg, name, cfg["settings"]["sleep"]),
    "mysql_table": lambda cfg, name: MysqlTableLock(cfg, name, cfg["settings"]["sleep"]),
    "mysql_get_lock": lambda cfg, name: MysqlGetLock(cfg, name),
    "pg_advisory_lock": lambda cfg, name: PgAdvisoryLock(cfg, name),
}


def factory(cfg):
    make = MAKERS[cfg["lib"]]
    return (lambda name: make(cfg, name)), sent, sessions
