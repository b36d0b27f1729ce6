// One worker process of a Node.js peer (redis-semaphore's Mutex or redlock), run by
// bench/peers/run_peers.py. The same protocol as lock_bench's C++ workers:
//   argv[2]: JSON settings (see run_peers.py: worker_settings)
//   stdout:  "ready" once connected and warmed up; then, at the end, one JSON line of results
//   stdin:   the common start, CLOCK_MONOTONIC nanoseconds (process.hrtime is that clock)
// job "loop" (free_for_all, fairness): C async loops acquire -> hold -> release until the window
// ends. job "hot_key": turns passed through pipes in a ring (byte 1 = the next turn is yours,
// byte 0 = stop), never through Redis; local turn k of this process goes to its loop k % C.
import fs from "node:fs";
import net from "node:net";
import { createRequire } from "node:module";
import Redis from "ioredis";
import Redlock from "redlock";

const require = createRequire(import.meta.url);
const { Mutex } = require("redis-semaphore");
const cfg = JSON.parse(process.argv[2]);
const now = () => Number(process.hrtime.bigint());
const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));

const client = new Redis(cfg.url, { enableAutoPipelining: false, maxRetriesPerRequest: 1 });
let commands = 0; // every command this client sends: ioredis routes each through sendCommand
const sendCommand = client.sendCommand.bind(client);
client.sendCommand = (command, stream) => {
  commands++;
  return sendCommand(command, stream);
};

// A lock of the chosen library: acquire() resolves true, or false on its own timeout.
function makeLock(name) {
  const s = cfg.settings;
  if (cfg.lib === "redis-semaphore") {
    const m = new Mutex(client, name, {
      acquireTimeout: cfg.timeout_ms, retryInterval: s.retryInterval, lockTimeout: 30000,
    });
    return {
      acquire: () => m.acquire().then(() => true, (e) => {
        if (e && e.name === "TimeoutError") return false;
        throw e;
      }),
      release: () => m.release(),
    };
  }
  const redlock = new Redlock([client], {
    retryDelay: s.retryDelay, retryJitter: s.retryJitter,
    retryCount: Math.ceil(cfg.timeout_ms / s.retryDelay), // retries for as long as acquire_for
  });
  let lock = null;
  return {
    acquire: () => redlock.acquire([name], 30000).then((l) => { lock = l; return true; }, (e) => {
      if (e && e.name === "ExecutionError") return false;
      throw e;
    }),
    release: () => lock.release(),
  };
}

async function hold(us) {
  const until = now() + us * 1000;
  if (us >= 1000) await sleepMs(Math.round(us / 1000)); // timers have 1 ms resolution
  while (now() < until) { /* below 1 ms: a busy wait, the holder's "work" */ }
}

const res = {
  acquisitions: 0, window_acquisitions: 0, timeouts: 0, per_loop: [], waits_us: [], turns: [],
  hold_us_sum: 0, release_us_sum: 0, timed: 0, waited: 0,
};

async function loop(c, lk, t) {
  res.per_loop[c] = 0;
  for (;;) {
    const asked = now();
    if (asked >= t.end) return;
    const ok = await lk.acquire();
    const got = now();
    if (asked >= t.begin && asked < t.end) res.waits_us.push((got - asked) / 1000);
    if (!ok) { res.timeouts++; continue; }
    if (got >= t.begin && got < t.end) { res.window_acquisitions++; res.per_loop[c]++; }
    await hold(cfg.hold_us);
    await lk.release();
    res.acquisitions++;
  }
}

// ---- hot_key turns ----------------------------------------------------------------------------
const ring = { received: cfg.index === 0 ? 1 : 0, stopped: false, waiting: new Map() };
function passTurn(byte) { fs.writeSync(cfg.pipe_out, Buffer.from([byte])); }
function onBytes(buf) {
  for (const b of buf) {
    if (b === 0) {
      if (!ring.stopped) { ring.stopped = true; passTurn(0); }
    } else {
      ring.received++;
    }
  }
  for (const [k, wake] of ring.waiting) {
    if (ring.stopped || ring.received > k) { ring.waiting.delete(k); wake(); }
  }
}
function turnGiven(k) {
  if (ring.stopped || ring.received > k) return Promise.resolve();
  return new Promise((r) => ring.waiting.set(k, r));
}

async function hotKey(c, lk, t) {
  for (let k = c; ; k += cfg.coroutines) {
    await turnGiven(k);
    if (ring.stopped) return;
    const requested = now(), cmds0 = commands;
    const ok = await lk.acquire();
    if (!ok) { res.timeouts++; ring.stopped = true; passTurn(0); return; }
    const acquired = now(), waited = commands - cmds0 > 1;
    const last = acquired >= t.end;
    if (last) { ring.stopped = true; passTurn(0); } else passTurn(1);
    await hold(cfg.hold_us);
    const releasing = now();
    await lk.release();
    const released = now();
    res.acquisitions++;
    res.turns.push([k * cfg.processes + cfg.index, requested, acquired, released]);
    if (acquired >= t.begin && acquired < t.end) {
      res.window_acquisitions++;
      res.hold_us_sum += (releasing - acquired) / 1000;
      res.release_us_sum += (released - releasing) / 1000;
      res.timed++;
      res.waited += waited ? 1 : 0;
    }
    if (last) return;
  }
}

async function main() {
  const warm = makeLock(`${cfg.name}:warm:${cfg.index}`); // scripts loaded, connection up
  if (!(await warm.acquire())) throw new Error("warm-up acquire failed");
  await warm.release();
  const locks = Array.from({ length: cfg.coroutines }, () => makeLock(cfg.name));
  let pipe = null;
  if (cfg.job === "hot_key") {
    pipe = new net.Socket({ fd: cfg.pipe_in, readable: true, writable: false });
    pipe.on("data", onBytes);
  }
  process.stdout.write("ready\n");
  const start = await new Promise((resolve) => {
    let text = "";
    process.stdin.on("data", (d) => {
      text += d;
      if (text.includes("\n")) resolve(Number(text.trim()));
    });
  });
  const t = { begin: start + cfg.warmup_ms * 1e6, end: start + (cfg.warmup_ms + cfg.duration_ms) * 1e6 };
  await sleepMs(Math.max(0, (start - now()) / 1e6));
  const cmds0 = commands, cpu0 = process.cpuUsage();
  const run = cfg.job === "hot_key" ? hotKey : loop;
  await Promise.all(locks.map((lk, c) => run(c, lk, t)));
  const cpu = process.cpuUsage(cpu0);
  res.commands = commands - cmds0;
  res.cpu_s = (cpu.user + cpu.system) / 1e6;
  process.stdout.write(JSON.stringify(res) + "\n");
  if (pipe) pipe.destroy();
  await client.quit();
  process.stdin.destroy();
}

main().catch((e) => {
  console.error(`node_driver (${cfg.lib}): ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
