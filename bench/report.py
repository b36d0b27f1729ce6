#!/usr/bin/python3
"""Turns the parts a benchmark run writes into bench/results/latest.json, latest.md and charts.

  report.py import-rb --out PART --name NAME [--connections N] [--pipeline N] [--keys N]
                      [--requests N] [--command TEXT] [--ceiling KEY=FIELD ...] CSV...
      redis-benchmark --csv outputs of the repetitions of one run: one row (mode
      "redis-benchmark"), each figure the median over the files; --ceiling ping_rtt_us=p50_us
      also records that figure as a ceiling.
  report.py set --out PART machine|ceiling KEY VALUE
  report.py merge --json OUT.json --md OUT.md [--charts DIR] [--intro TEXT] [--stores|--rate|--herd|--failover]
                   PART...
      assembles the document of /work/shared/BENCH.md, judges every target, prints the markdown.
      --stores: the stores' comparison (scripts/bench.sh --stores): rows carry "backend"; the
      markdown opens with corolock on every store side by side, then each store against its
      peers (the goal: ahead of every peer on every row), and the chart is <stem>-stores.png.
      --rate: rate_bench's rows of every store (scripts/bench.sh --rate): accuracy and cost per
      admission of corolock's acquire and of the fixed poll, and their ratios; no charts.
      --herd: herd_bench's rows of every store (scripts/bench.sh --herd): store requests per
      hand-off with few and many waiters, and their ratio; no charts.
      --failover: failover_bench's and failover_peer.py's rows (scripts/bench.sh --failover): an
      election's failover after its leader is killed, against the timeout; no charts.

A part is JSON lines: {"kind": "scenario", "row": {...}}, {"kind": "machine"|"ceiling",
"key": K, "value": V}. A row's "targets" list says what it is judged against (see
bench/common/bench.hpp); merge writes each verdict into the target and the first one also into
the row's flat fields (baseline, ratio_metric, better, target, target_ratio, ratio,
ceiling_fraction, target_met) that earlier results had.
Runs with Debian's /usr/bin/python3: only the standard library; the charts are drawn by gnuplot.
"""
import argparse
import csv
import json
import math
import operator
import os
import shutil
import statistics
import subprocess
import sys

OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def append_line(path, obj):
    with open(path, "a") as f:
        f.write(json.dumps(obj) + "\n")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ---- import-rb, set ---------------------------------------------------------------------------

def import_rb(a):
    runs = []  # per file: test -> {column: value}
    order = []
    for path in a.csv:
        with open(path) as f:
            rows = [r for r in csv.reader(f) if r]
        header = next((r for r in rows if r[0] == "test"), None)
        if header is None:
            sys.exit(f"{path}: no redis-benchmark CSV header")
        run = {}
        for r in rows[rows.index(header) + 1:]:
            if len(r) != len(header):
                continue
            vals = {}
            for k, v in zip(header[1:], r[1:]):
                try:
                    vals[k] = float(v)
                except ValueError:
                    pass
            run[r[0]] = vals
            if r[0] not in order:
                order.append(r[0])
        cpu = path + ".cpu"  # "user system" seconds of that redis-benchmark, timed by bench.sh
        if os.path.exists(cpu) and a.requests:
            try:
                user, system = map(float, open(cpu).read().split()[:2])
                for vals in run.values():
                    vals["client_cpu_us_per_op"] = (user + system) * 1e6 / a.requests
            except ValueError:
                pass
        runs.append(run)
    for i, test in enumerate(order):
        reps = [r[test] for r in runs if test in r]
        fig = lambda k, scale=1.0: (lambda m: None if m is None else round(m * scale, 1))(
            median([r.get(k) for r in reps]))
        ops = median([r.get("rps") for r in reps]) or 0
        rps = [r["rps"] for r in reps if r.get("rps")]
        row = {"name": a.name, "mode": "redis-benchmark", "processes": 1,
               "coroutines": a.connections, "keys": a.keys, "ops": a.requests,
               "seconds": round(a.requests / ops, 3) if ops else 0, "ops_per_s": round(ops),
               "p50_us": fig("p50_latency_ms", 1000), "p99_us": fig("p99_latency_ms", 1000),
               "redis_cmds_per_op": 1, "repetitions": len(reps), "connections": a.connections,
               "pipeline": a.pipeline, "test": test, "command": a.command,
               "mean_us": fig("avg_latency_ms", 1000), "max_us": fig("max_latency_ms", 1000),
               "client_cpu_us_per_op": fig("client_cpu_us_per_op"),
               "ops_per_s_spread": round(max(rps) / min(rps), 3) if rps else None}
        append_line(a.out, {"kind": "scenario", "row": row})
        print(f"redis-benchmark {a.name} ({test}): {ops:.0f} ops/s, p50 {row['p50_us']} us "
              f"({len(reps)} runs)")
        if i == 0:
            for c in a.ceiling:
                key, field = c.split("=", 1)
                append_line(a.out, {"kind": "ceiling", "key": key, "value": row.get(field)})


def set_entry(a):
    try:
        value = json.loads(a.value)
    except ValueError:
        value = a.value
    append_line(a.out, {"kind": a.what, "key": a.key, "value": value})


# ---- merge: judging -----------------------------------------------------------------------------

def judge(row, rows):
    """Evaluates row["targets"] in place; returns [(target, verdict)]."""
    out = []
    for t in row.get("targets", []):
        mine = row.get(t["metric"])
        op = t["op"]
        t["measured"] = mine
        met = None
        if t["kind"] == "absolute":
            limit = t["value"]
            if isinstance(mine, (int, float)):
                met = OPS[op](mine, limit)
                t["ratio"] = round(mine / limit, 3) if limit else None
        else:  # a baseline of the same store (rows without one, e.g. redis-benchmark's: any)
            base = [r for r in rows if r["name"] == t["baseline_name"]
                    and r["mode"] == t["baseline_mode"]
                    and r.get("backend", row.get("backend")) == row.get("backend")]
            theirs = base[-1].get(t["metric"]) if base else None
            t["baseline_value"] = theirs
            if isinstance(mine, (int, float)) and theirs:
                t["measured_ratio"] = round(mine / theirs, 3)
                if t.get("ratio") is not None:
                    met = OPS[op](mine / theirs, t["ratio"])
        t["met"] = met
        out.append((t, met))
    # The flat fields of earlier results, from the first target.
    if out:
        t = out[0][0]
        higher = t["op"].startswith(">")
        if t["kind"] == "absolute":
            ratio = t.get("ratio")
            row.update(baseline=t["label"], target_kind="absolute", target_value=t["value"],
                       target_ratio=1.0, target=f"{t['op']} 1.00")
        else:
            ratio = t.get("measured_ratio")
            row.update(baseline=t["label"], baseline_name=t["baseline_name"],
                       baseline_mode=t["baseline_mode"], target_ratio=t.get("ratio"),
                       target=None if t.get("ratio") is None else f"{t['op']} {t['ratio']:.2f}")
        row.update(ratio_metric=t["metric"], better="higher" if higher else "lower", ratio=ratio,
                   ceiling_fraction=None if not ratio else round(ratio if higher else 1 / ratio, 3))
        verdicts = [m for _, m in out if m is not None]
        row["target_met"] = (all(verdicts) if verdicts else None) if any(
            "value" in tt or tt.get("ratio") is not None for tt, _ in out) else None
    return out


def fmt_num(x, digits=0):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if isinstance(x, str):
        return x
    if abs(x) >= 1000 or digits == 0:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def target_text(t):
    verdict = {True: "MET", False: "MISSED", None: "NOT MEASURED"}[t.get("met")]
    if t["kind"] == "absolute":
        return (f"{t['metric']} {fmt_num(t.get('measured'), 2)} {t['op']} "
                f"{fmt_num(t['value'], 2)} ({t['label']}) — {verdict}")
    if t.get("ratio") is None:
        return f"{t['metric']} {fmt_num(t.get('measured_ratio'), 2)}× {t['label']} (no target)"
    return (f"{t['metric']} {fmt_num(t.get('measured_ratio'), 2)}× {t['label']}, target "
            f"{t['op']} {t['ratio']:.2f} — {verdict}")


# ---- merge: markdown --------------------------------------------------------------------------

def col(header, key, digits=1):
    return (header, lambda r: fmt_num(r.get(key), digits))


PC = ("P×C", lambda r: f"{r.get('processes')}×{r.get('coroutines')}")
MODE = ("mode", lambda r: r.get("mode", ""))
CMDS = [col("cmds/acq", "redis_cmds_per_op", 2), col("Redis calls/acq", "redis_calls_per_op", 2)]
SHARE = ("process share / fair", lambda r: f"{fmt_num(r.get('min_share_ratio'), 2)}–"
         f"{fmt_num(r.get('max_share_ratio'), 2)}")
VERDICT = ("targets", lambda r: " ".join(
    {True: "MET", False: "**MISSED**", None: "—"}[t.get("met")] for t in r.get("targets", [])
    if t["kind"] == "absolute" or t.get("ratio") is not None))

PRIM = ("primitive", lambda r: r.get("primitive", "mutex"))
# A paired ratio (median of the per-repetition ratios) with its extremes: "0.10 (0.08–0.32)".
RANGE = lambda header, key: (header, lambda r: "—" if r.get(key) is None else (
    f"{fmt_num(r[key], 3)} ({fmt_num(r.get(key + '_min'), 3)}–{fmt_num(r.get(key + '_max'), 3)})"))

# What each scenario's table shows (any other scenario gets DEFAULT).
COLUMNS = {
    "family_uncontended": [PRIM, col("cycles/s", "ops_per_s", 0), col("p50 µs", "p50_us"),
                           col("p99 µs", "p99_us"), col("cmds/cycle", "redis_cmds_per_op", 2),
                           col("client CPU µs/cycle", "client_cpu_us_per_op", 2)],
    "family_hot_key": [PRIM, MODE, col("acq/s", "ops_per_s", 0), col("hand-off p50 µs", "p50_us"),
                       col("p99 µs", "p99_us"), col("× poll_30ms", "vs_poll_30ms", 1),
                       col("× poll_1ms", "vs_poll_1ms", 1), *CMDS],
    "redlock_uncontended": [PRIM, col("masters", "masters", 0), col("cycles/s", "ops_per_s", 0),
                            RANGE("× mutex", "vs_mutex"), RANGE("× redlock", "vs_redlock"),
                            col("p50 µs", "p50_us"),
                            col("p99 µs", "p99_us"), col("cmds/cycle", "redis_cmds_per_op", 2),
                            col("Redis calls/cycle", "redis_calls_per_op", 2),
                            col("client CPU µs/cycle", "client_cpu_us_per_op", 2)],
    "redlock_hot_key": [PRIM, MODE, col("acq/s", "ops_per_s", 0), col("hand-off p50 µs", "p50_us"),
                        col("p99 µs", "p99_us"), col("× poll_30ms", "vs_poll_30ms", 2),
                        col("× poll_1ms", "vs_poll_1ms", 2), RANGE("× mutex", "vs_mutex"),
                        RANGE("× redlock", "vs_redlock"), col("turns waited", "waited_fraction", 2),
                        col("waited hand-off p50 µs", "waited_p50_us", 0), *CMDS],
    "hot_key": [MODE, PC, col("acq/s", "ops_per_s", 0), col("hand-off p50 µs", "p50_us"),
                col("p99 µs", "p99_us"), col("max µs", "max_us", 0),
                col("hold µs", "hold_actual_us"), col("release µs", "release_us"),
                col("hand-off mean µs", "handoff_mean_us"),
                col("limit acq/s", "limit_ops_per_s", 0), col("of limit", "of_limit", 2),
                *CMDS, VERDICT],
    "free_for_all": [MODE, PC, col("acq/s", "ops_per_s", 0), col("wait p50 µs", "p50_us"),
                     col("p99 µs", "p99_us", 0), col("max µs", "max_us", 0),
                     col("top worker share", "max_share", 3), SHARE,
                     col("timeouts", "timeouts", 0), *CMDS, VERDICT],
    "fairness": [MODE, PC, col("acq/s", "ops_per_s", 0), SHARE, col("wait p50 µs", "p50_us", 0),
                 col("p99 µs", "p99_us", 0), col("max µs", "max_us", 0),
                 col("p99 limit µs", "wait_p99_limit_us", 0), col("timeouts", "timeouts", 0),
                 *CMDS, VERDICT],
    "hot_key_waiters": [MODE, ("P", lambda r: str(r.get("processes"))),
                        col("W", "waiters", 0), col("drain ms", "drain_ms", 1),
                        col("W × hold ms", "ideal_ms", 1), col("hand-off p99 µs", "p99_us"),
                        *CMDS, VERDICT],
    "waiter_memory": [MODE, PC, col("added MiB", "rss_added_mib", 1),
                      col("resident B/waiter", "bytes_per_waiter", 0),
                      col("heap B/waiter", "heap_bytes_per_waiter", 0), VERDICT],
    "held_memory": [MODE, PC, col("added MiB", "rss_added_mib", 1),
                    col("resident B/lock", "bytes_per_held_lock", 0),
                    col("heap B/lock", "heap_bytes_per_held_lock", 0),
                    col("resident B/lock, idle lines dropped", "bytes_per_held_lock_settled", 0),
                    col("heap B/lock, idle lines dropped", "heap_bytes_per_held_lock_settled", 0),
                    col("release all s", "release_all_s", 2), VERDICT],
}
TLS = [MODE, col("ops/s", "ops_per_s", 0), col("p50 µs", "p50_us"), col("p99 µs", "p99_us"),
       col("TLS − plain p50 µs", "overhead_p50_us"), col("× plain ops/s", "vs_plain", 2),
       col("client CPU µs/op", "client_cpu_us_per_op", 2)]
COLUMNS["tls_ping"] = TLS
COLUMNS["tls_uncontended"] = TLS
DEFAULT = [MODE, PC, col("ops/s", "ops_per_s", 0), col("p50 µs", "p50_us"),
           col("p99 µs", "p99_us"), col("cmds/op", "redis_cmds_per_op", 2),
           col("Redis calls/op", "redis_calls_per_op", 2),
           col("pipelining", "pipelining_factor", 1),
           col("client CPU µs/op", "client_cpu_us_per_op", 2), VERDICT]


def table(rows, cols):
    lines = ["| " + " | ".join(h for h, _ in cols) + " |",
             "| " + " | ".join("---" if i < 2 else "---:" for i in range(len(cols))) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(str(f(r)).replace("|", "\\|") for _, f in cols) + " |")
    return "\n".join(lines) + "\n"


def machine_line(m):
    return "Machine: " + ", ".join(f"{k} {v if isinstance(v, str) else json.dumps(v)}"
                                   for k, v in m.items()) + "\n"


def markdown(doc, charts, intro=None):
    m = doc["machine"]
    out = ["# corolock benchmarks\n",
           intro or f"Produced by `scripts/bench.sh{' --quick' if m.get('quick') else ''}`: one "
           "private redis-server on loopback; every figure the median of its repetitions; "
           "baselines and peers measured against the same server in the same run. How to read "
           "the figures: `bench/README.md`.\n",
           machine_line(m),
           "## Ceiling (redis-benchmark, same server, same run)\n",
           table([{"k": k, "v": v} for k, v in doc["ceiling"].items()],
                 [("figure", lambda r: f"`{r['k']}`"), ("value", lambda r: fmt_num(r["v"], 1))])]
    names = []
    for r in doc["scenarios"]:
        if r["name"] not in names:
            names.append(r["name"])
    for name in names:
        rows = [r for r in doc["scenarios"] if r["name"] == name]
        out.append(f"## {name}\n")
        out.append(table(rows, COLUMNS.get(name, DEFAULT)))
    peers = {}
    for r in doc["scenarios"]:
        if r.get("library"):
            peers[r["mode"]] = f"{r['library']} {r.get('library_version', '')}: {r.get('retry', '')}"
    if peers:
        out.append("## Peers\n")
        out.append("".join(f"- `{k}`: {v}\n" for k, v in peers.items()))
    targets = [(r, t) for r in doc["scenarios"] for t in r.get("targets", [])]
    if targets:
        out.append("\n## Targets\n")
        out.append("".join(f"- `{r['name']}` ({r['mode']}, {r['processes']}×{r['coroutines']}): "
                           f"{target_text(t)}\n" for r, t in targets))
    for c in charts:
        out.append(f"\n![{c[1]}]({c[0]})\n")
    return "\n".join(out)


# ---- merge: charts ----------------------------------------------------------------------------
# Drawn by gnuplot (Debian's gnuplot-nox, pngcairo): matplotlib's Debian dependencies pull in
# Boost 1.74, which cannot be installed beside the Boost 1.81 the library builds with. Each chart is
# one gnuplot script fed on stdin, its data inline as datablocks; sizes are matplotlib's at 90 dpi,
# as the charts had before.

BLUE, GREY, ORANGE, GREEN, RED = "#3c7dc4", "#9aa5b1", "#d9914a", "#3c9a5f", "#c8553d"
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
         "#bcbd22", "#17becf"]  # the processes' colours, matplotlib's as before


def gp_str(s):
    """A gnuplot double-quoted string (a newline in s breaks the line)."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def gp_block(name, rows):
    """A datablock: one line per row; strings quoted (a data file knows no escapes)."""
    field = lambda v: '"' + v.replace('"', "'") + '"' if isinstance(v, str) else repr(v)
    return f"${name} << EOD\n" + "".join(" ".join(map(field, r)) + "\n" for r in rows) + "EOD\n"


def gp_tics(labels):
    return "(" + ", ".join(f"{gp_str(l)} {i}" for i, l in enumerate(labels)) + ")"


def gp_log_range(values, top):
    """A log axis from the decade below the smallest positive value to top × the largest."""
    positive = [v for v in values if v and v > 0] or [1]
    return 10 ** math.floor(math.log10(min(positive))), max(positive) * top


def gnuplot(path, width, height, body):
    """Runs body after the terminal settings; the PNG goes to path. A failing script stops the
    report (as a failing matplotlib call did)."""
    script = (f'set encoding utf8\nset terminal pngcairo size {round(width)},{round(height)} '
              f'font "DejaVu Sans,9" noenhanced\nset output {gp_str(path)}\n'
              'set style fill solid 1.0 noborder\n' + body + "unset multiplot\nset output\n")
    # stdout to nowhere: where the output file cannot be opened, gnuplot writes the PNG there.
    r = subprocess.run(["gnuplot"], input=script, text=True, errors="replace",
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"report.py: gnuplot failed on {path}:\n{r.stderr}")
    if r.stderr.strip():
        print(f"report.py: gnuplot on {path}:\n{r.stderr}", file=sys.stderr)


def gp_step(top):
    """A tic step of 1, 2 or 5 × 10^k that gives an axis from 0 to top four or five tics."""
    raw = top / 4
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def gp_log_tics(lo, hi):
    """Tics of a log axis: 1, 2 and 5 × 10^k where it spans two decades or less (gnuplot would
    label only the powers of ten), else gnuplot's."""
    if hi / lo > 100:
        return "autofreq"
    tics = [m * 10 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)]
    return "(" + ", ".join(f"{t:g}" for t in tics if lo <= t <= hi) + ")"


def hbars(name, labels, values, colors, texts, xrange, log, xlabel, title=None, ytic_font=8,
          extra=""):
    """One panel of horizontal bars, the first label at the top, the value printed after each;
    extra: more settings for the panel."""
    lo, hi = xrange
    rows = [(l, max(v, lo), int(c[1:], 16), t) for l, v, c, t in zip(labels, values, colors, texts)]
    # gnuplot sizes the left margin by the default font; the labels are smaller.
    margin = math.ceil(max(map(len, labels)) * ytic_font / 9 * 0.9) + 2
    if len(xlabel) > 45:  # a long axis label on two lines, where a panel is narrow
        xlabel = xlabel.replace(" (", "\n(", 1)
    return (gp_block(name, rows) +
            f"set title {gp_str(title or '')} font \",10\"\n"
            f"{'set' if log else 'unset'} logscale x\nset xrange [{lo!r}:{hi!r}]\n"
            f"set yrange [{len(rows) - 0.5}:-0.5]\nset lmargin {margin}\n"
            f"set ytics nomirror scale 0 font \",{ytic_font}\"\n"
            f"set xtics nomirror {gp_log_tics(lo, hi) if log else repr(gp_step(hi))} font \",8\"\n"
            f"unset key\nset xlabel {gp_str(xlabel)} font \",8\"\n" + extra +
            f"plot ${name} using ({lo!r}):0:({lo!r}):2:($0-0.4):($0+0.4):3:ytic(1) "
            "with boxxyerror lc rgb variable, \\\n"
            f"  '' using 2:0:4 with labels left font \",7\"\n")


def charts(doc, directory, stem):
    """PNG charts beside the results; returns [(file name, title)]."""
    if shutil.which("gnuplot") is None:
        print("report.py: no gnuplot (scripts/deps.sh --bench): no charts", file=sys.stderr)
        return []
    made = []
    rows = doc["scenarios"]

    def rows_of(name, shape=None):
        return [r for r in rows if r["name"] == name and r.get("ops_per_s") is not None and
                (shape is None or (r["processes"], r["coroutines"]) == shape)]

    # 1. Contended: acquisitions/s and Redis commands per acquisition, every mode and peer.
    panels = [(f"hot_key {p}×{c} (turns)", rows_of("hot_key", (p, c))) for p, c in [(4, 1)]]
    panels += [(f"free_for_all {p}×{c}", rows_of("free_for_all", (p, c))) for p, c in
               sorted({(r["processes"], r["coroutines"]) for r in rows_of("free_for_all")})]
    panels += [(f"fairness {r0['processes']}×{r0['coroutines']}", rows_of("fairness"))
               for r0 in rows_of("fairness")[:1]]
    panels = [p for p in panels if p[1]]
    if panels:
        body = (f"set multiplot layout 2,{len(panels)} columnsfirst title "
                f"{gp_str('One hot lock: corolock pubsub (blue), polling (grey), peers (orange)')}"
                " font \",12\"\n")
        for i, (title, rs) in enumerate(panels):
            labels = [r["mode"] for r in rs]
            colors = [BLUE if r["mode"] == "pubsub" else
                      GREY if r["mode"].startswith(("poll", "setnx")) else ORANGE for r in rs]
            for j, (key, what, digits) in enumerate((
                    ("ops_per_s", "acquisitions/s (higher is better)", 0),
                    ("redis_cmds_per_op", "Redis commands sent per acquisition "
                     "(lower is better)", 1))):
                values = [r.get(key) or 0 for r in rs]
                positive = [v for v in values if v > 0]
                log = bool(positive) and max(positive) / min(positive) > 20
                xrange = gp_log_range(values, 3) if log else (0, max(values or [1]) * 1.25 or 1)
                body += hbars(f"p{i}_{j}", labels, values, colors,
                              [f" {v:,.{digits}f}" for v in values], xrange, log,
                              what + (" — log scale" if log else ""), title if j == 0 else None)
        name = f"{stem}-contended.png"
        gnuplot(os.path.join(directory, name), 4.2 * 90 * len(panels), 7.5 * 90, body)
        made.append((name, "acquisitions/s and commands per acquisition on one hot lock"))

    # 2. Fairness: each process's share of acquisitions relative to a fair share, and wait p99.
    fair = rows_of("fairness")
    if fair:
        P = fair[0]["processes"]
        width = 0.8 / P
        modes = gp_tics([r["mode"] for r in fair])
        body = gp_block("share", [[i] + [r.get(f"share_ratio_p{p}") or 0 for p in range(P)]
                                  for i, r in enumerate(fair)])
        body += ("set multiplot layout 1,2\n"
                 f"set xrange [-0.6:{len(fair) - 0.4}]\nset yrange [0:*]\n"
                 f"set xtics {modes} rotate by 30 right font \",8\" scale 0\n"
                 "set ylabel \"share of acquisitions / fair share\"\n"
                 "set key below horizontal reverse Left font \",8\" samplen 1.5\n"
                 "set ytics nomirror\n"
                 + "".join(f"set linetype {i + 1} lc rgb \"{c}\"\n" for i, c in enumerate(TAB10)) +
                 "set title \"fairness: share per process (1 = fair)\" font \",10\"\n"
                 f"set boxwidth {width!r} absolute\n"
                 f"plot '+' using 1:(0.8):(1.2) with filledcurves lc rgb \"{GREEN}\" "
                 "fs transparent solid 0.15 title \"target 0.8–1.2\", \\\n"
                 f"  for [p=0:{P - 1}] $share using ($1 + (p - {(P - 1) / 2!r}) * {width!r})"
                 ":(column(p + 2)) with boxes lt p + 1 title sprintf(\"process %d\", p)\n")
        p99 = [(r.get("p99_us") or 0) / 1000 for r in fair]
        limit = [(r.get("wait_p99_limit_us") or 0) / 1000 for r in fair]
        lo, hi = gp_log_range(p99 + limit, 1.5)
        body += gp_block("p99", [(i, max(v, lo), l if l > 0 else math.nan)
                                 for i, (v, l) in enumerate(zip(p99, limit))])
        body += ("set logscale y\n"
                 f"set yrange [{lo!r}:{hi!r}]\nset ylabel \"ms (log)\"\n"
                 "set title \"fairness: wait p99 against its target\" font \",10\"\n"
                 f"plot $p99 using 1:2:($1-0.4):($1+0.4):({lo!r}):2 with boxxyerror "
                 f"lc rgb \"{BLUE}\" title \"wait p99\", \\\n"
                 "  '' using ($1-0.3):3:(0.6):(0) with vectors nohead lw 2 lc rgb \"black\" "
                 "title \"target: 2 × N × cycle\"\n")
        name = f"{stem}-fairness.png"
        gnuplot(os.path.join(directory, name), 12 * 90, 4.5 * 90, body)
        made.append((name, "fairness: share per process and wait p99"))

    # 3. Targets: each judged figure as a fraction of its target (1 = just met).
    bars = []
    for r in rows:
        for t in r.get("targets", []):
            if t.get("met") is None:
                continue
            v = t.get("measured_ratio") if t["kind"] == "baseline" else t.get("measured")
            limit = t["ratio"] if t["kind"] == "baseline" else t["value"]
            if v is None:
                continue
            higher = t["op"].startswith(">")
            frac = (v / limit if higher else (limit / v if v else 10)) if limit else (
                1.0 if t["met"] else 0.0)
            bars.append((f"{r['name']} {r['mode']} {r['processes']}×{r['coroutines']}: "
                         f"{t['metric']}", min(frac, 10), t["met"]))
    if bars:
        fracs = [max(b[1], 1e-3) for b in bars]
        lo, hi = gp_log_range(fracs + [1], 1.5)
        body = hbars("t", [b[0] for b in bars], fracs, [GREEN if b[2] else RED for b in bars],
                     ["" for _ in bars], (lo, hi), True,
                     "measured ÷ target, oriented so that ≥ 1 meets it (log; green met, red "
                     "missed)", "corolock against its targets", ytic_font=7,
                     extra="set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 front\n")
        name = f"{stem}-targets.png"
        gnuplot(os.path.join(directory, name), 10 * 90, (0.32 * len(bars) + 1.2) * 90, body)
        made.append((name, "every target: measured ÷ target"))
    return made


# ---- merge --stores: the stores side by side ----------------------------------------------------

STORES = [("redis", "Redis"), ("zookeeper", "ZooKeeper"), ("etcd", "etcd"), ("mysql", "MariaDB"),
          ("postgres", "PostgreSQL")]
COROLOCK_MODES = ("corolock", "pubsub", "watch", "server_wait")  # corolock's own waiting, per store


def corolock_row(rows, backend, name, processes=None):
    for r in rows:
        if (r.get("backend") == backend and r["name"] == name and r["mode"] in COROLOCK_MODES
                and (processes is None or r["processes"] == processes)):
            return r
    return None


def stores_text(rows):
    """"five stores": how many stores the run measured (BENCH_STORES may leave some out)."""
    n = sum(1 for b, _ in STORES if any(r.get("backend") == b for r in rows))
    word = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))
    return f"{word} store{'' if n == 1 else 's'}"


def share_text(r):
    return f"{fmt_num(r.get('min_share_ratio'), 2)}–{fmt_num(r.get('max_share_ratio'), 2)}"


# (workload label, scenario, processes, [(figure label, value of a row)])
STORE_FIGURES = [
    ("uncontended, 1 coroutine", "uncontended_latency", None, [
        ("cycles/s", lambda r: fmt_num(r.get("ops_per_s"))),
        ("cycle p50 µs", lambda r: fmt_num(r.get("p50_us"), 1)),
        ("sessions", lambda r: fmt_num(r.get("sessions")))]),
    ("uncontended, 1 000 coroutines, 10 000 locks", "uncontended_throughput", None, [
        ("cycles/s", lambda r: fmt_num(r.get("ops_per_s"))),
        ("sessions", lambda r: fmt_num(r.get("sessions")))]),
    ("hot key 4 × 1, hold 100 µs", "hot_key", None, [
        ("acquisitions/s", lambda r: fmt_num(r.get("ops_per_s"))),
        ("hand-off p50 / p99 µs", lambda r: f"{fmt_num(r.get('p50_us'))} / {fmt_num(r.get('p99_us'))}"),
        ("release round trip µs", lambda r: fmt_num(r.get("release_us"), 1)),
        ("limit acq/s (hold + release RTT + wake-up ½ RTT)", lambda r: fmt_num(r.get("limit_wake_ops_per_s"))),
        ("of that limit", lambda r: fmt_num(r.get("of_limit_wake"), 2)),
        ("sessions", lambda r: fmt_num(r.get("sessions")))]),
    ("fairness 4 × 8, hold 1 ms", "fairness", None, [
        ("acquisitions/s", lambda r: fmt_num(r.get("ops_per_s"))),
        ("process share / fair", share_text),
        ("wait p99 ms", lambda r: fmt_num((r.get("p99_us") or 0) / 1000, 1) if r.get("p99_us") else "—"),
        ("timeouts", lambda r: fmt_num(r.get("timeouts"))),
        ("sessions", lambda r: fmt_num(r.get("sessions")))]),
    *[(f"1 000 waiters at once, {P} process{'es' if P > 1 else ''}", "hot_key_waiters", P, [
        ("drain ms (W × hold = 100)", lambda r: fmt_num(r.get("drain_ms"), 1)),
        ("acquisitions/s (served ÷ drain)", lambda r: fmt_num(r.get("ops_per_s"))),
        ("hand-off p50 / p99 µs", lambda r: f"{fmt_num(r.get('p50_us'))} / {fmt_num(r.get('p99_us'))}"),
        ("timed out (of 1 000)", lambda r: fmt_num(r.get("timeouts"))),
        ("sessions", lambda r: fmt_num(r.get("sessions")))]) for P in (1, 4)],
]

# The headline figure each peer comparison judges: (scenario, figure, higher is better)
# (the waiters' acquisitions/s: acquisitions ÷ drain time, so requests that timed out count against)
GOAL_FIGURES = [("uncontended_latency", "ops_per_s", True), ("hot_key", "ops_per_s", True),
                ("fairness", "ops_per_s", True), ("hot_key_waiters", "ops_per_s", True)]


def stores_side_by_side(rows):
    present = [(b, label) for b, label in STORES if any(r.get("backend") == b for r in rows)]
    cols = [("workload", lambda x: x[0]), ("figure", lambda x: x[1])]
    cols += [(label, (lambda i: lambda x: x[2][i])(i)) for i, (_, label) in enumerate(present)]
    lines = []
    for workload, name, P, figs in STORE_FIGURES:
        found = [corolock_row(rows, b, name, P) for b, _ in present]
        if not any(found):
            continue
        for k, (label, value) in enumerate(figs):
            lines.append((workload if k == 0 else "", label,
                          [value(r) if r else "—" for r in found]))
    return table(lines, cols)


def peer_goals(rows):
    """Each store's peers against corolock on the same workload: [(backend, scenario, peer row,
    corolock row, ratio oriented so that > 1 is corolock ahead, met)]."""
    out = []
    for b, _ in STORES:
        for name, fig, higher in GOAL_FIGURES:
            P = 4 if name == "hot_key_waiters" else None
            mine = corolock_row(rows, b, name, P)
            for peer in (r for r in rows if r.get("backend") == b and r["name"] == name
                         and r.get("library")):
                ours, theirs = (mine or {}).get(fig), peer.get(fig)
                ratio = met = None
                if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and ours and theirs:
                    ratio = ours / theirs if higher else theirs / ours
                    met = ratio > 1
                out.append((b, name, fig, peer, mine, ratio, met))
    return out


def stores_markdown(doc, charts, intro):
    rows = doc["scenarios"]
    m = doc["machine"]
    out = [f"# corolock on {stores_text(rows)}\n",
           intro or "Produced by `scripts/bench.sh --stores`: corolock's `lock_bench --backend` on a "
           "private redis-server, ZooKeeper, etcd, MariaDB and PostgreSQL (the test fixtures' servers, "
           "loopback), then each store's peers, in one run; every figure the median of its "
           "repetitions. How to read the figures: `bench/README.md`.\n",
           machine_line(m),
           "## corolock, store by store (same workloads, same run)\n",
           stores_side_by_side(rows),
           "\nSessions: the TCP connections to the server, the most each process had open at "
           "once, summed over the processes.\n"]
    goals = peer_goals(rows)
    if goals:
        out.append("## Against each store's peers (goal: ahead of every peer on every row)\n")
        cols = [("store", lambda g: dict(STORES)[g[0]]), ("workload", lambda g: g[1]),
                ("peer", lambda g: g[3]["mode"]), ("figure", lambda g: g[2]),
                ("corolock", lambda g: fmt_num((g[4] or {}).get(g[2]), 1)),
                ("peer's", lambda g: g[3].get("not_run") and "not run" or fmt_num(g[3].get(g[2]), 1)),
                ("corolock ahead ×", lambda g: fmt_num(g[5], 2)),
                ("sessions corolock / peer", lambda g: f"{fmt_num((g[4] or {}).get('sessions'))} / "
                 f"{fmt_num(g[3].get('waiters') if g[3].get('not_run') else g[3].get('sessions'))}"),
                ("goal", lambda g: {True: "MET", False: "**MISSED**",
                                    None: "— (peer not run: " + g[3]["not_run"] + ")"
                                    if g[3].get("not_run") else "—"}[g[6]])]
        out.append(table(goals, cols))
        met = sum(1 for g in goals if g[6])
        missed = sum(1 for g in goals if g[6] is False)
        out.append(f"\nGoals: {met} met, {missed} missed, {len(goals) - met - missed} not measured.\n")
    peers = {}
    for r in rows:
        if r.get("library"):
            peers[r["mode"]] = f"{r['library']} {r.get('library_version') or ''}: {r.get('retry', '')}"
    if peers:
        out.append("## Peers\n")
        out.append("".join(f"- `{k}`: {v}\n" for k, v in peers.items()))
    out.append("## Every row\n")
    names = []
    for r in rows:
        if r["name"] not in names:
            names.append(r["name"])
    store_col = ("store", lambda r: r.get("backend", ""))
    sessions_col = col("sessions", "sessions", 0)
    for name in names:
        rs = [r for r in rows if r["name"] == name]
        out.append(f"### {name}\n")
        out.append(table(rs, [store_col] + COLUMNS.get(name, DEFAULT) + [sessions_col]))
    for c in charts:
        out.append(f"\n![{c[1]}]({c[0]})\n")
    return "\n".join(out)


def stores_chart(doc, directory, stem):
    """One panel per workload: corolock on each store (blue) and each store's peers (orange)."""
    if shutil.which("gnuplot") is None:
        print("report.py: no gnuplot (scripts/deps.sh --bench): no charts", file=sys.stderr)
        return []
    rows = doc["scenarios"]
    panels = []
    for title, name, fig, P, higher in [
            ("uncontended: cycles/s", "uncontended_latency", "ops_per_s", None, True),
            ("hot key 4 × 1: acquisitions/s", "hot_key", "ops_per_s", None, True),
            ("fairness 4 × 8: acquisitions/s", "fairness", "ops_per_s", None, True),
            ("1 000 waiters × 4 processes: acq/s", "hot_key_waiters", "ops_per_s", 4, True)]:
        bars = []
        for b, label in STORES:
            for r in rows:
                if (r.get("backend") == b and r["name"] == name and isinstance(r.get(fig), (int, float))
                        and (P is None or r["processes"] == P)):
                    mine = r["mode"] in COROLOCK_MODES
                    bars.append((f"{label} {'corolock' if mine else r['mode']}", r[fig],
                                 BLUE if mine else ORANGE))
        if bars:
            panels.append((title, "log scale; " + ("higher" if higher else "lower") + " is better", bars))
    if not panels:
        return []
    body = (f"set multiplot layout 1,{len(panels)} title "
            f"{gp_str(f'corolock (blue) on {stores_text(rows)}, and each store’s peers (orange)')} "
            "font \",12\"\n")
    for i, (title, xlabel, bars) in enumerate(panels):
        values = [b[1] for b in bars]
        body += hbars(f"s{i}", [b[0] for b in bars], values, [b[2] for b in bars],
                      [f" {v:,.0f}" for v in values], gp_log_range(values, 4), True, xlabel, title)
    name = f"{stem}-stores.png"
    gnuplot(os.path.join(directory, name), 4.6 * 90 * len(panels), 6 * 90, body)
    return [(name, f"corolock on {stores_text(rows)}, and each store's peers")]


# ---- merge --rate: the rate limiter against a fixed poll (scripts/bench.sh --rate) ----------

STORE_LABEL = dict(STORES)
RATE_COLUMNS = [
    ("store", lambda r: STORE_LABEL.get(r.get("backend"), r.get("backend", ""))), MODE,
    col("admitted/s", "ops_per_s", 1),
    col("after the burst /s", "net_rate_per_s", 1),
    ("vs rate: median (worst, absolute)", lambda r: "—" if r.get("rate_error_pct") is None else
     f"{r['rate_error_pct']:+.2f} % ({fmt_num(r.get('rate_error_abs_pct_worst'), 2)} %)"),
    ("most in 1 s: median (worst) / limit", lambda r: f"{fmt_num(r.get('max_1s_window'))} "
     f"({fmt_num(r.get('max_1s_window_worst'))}) / {fmt_num(r.get('limit_1s'))}"),
    col("most in 1 s after the first", "max_1s_window_after_1s", 0),
    col("requests/admission", "requests_per_admission", 2),
    col("client CPU µs/admission", "client_cpu_us_per_op", 1),
    col("server CPU µs/admission", "server_cpu_us_per_op", 1),
    ("process share / fair", share_text), VERDICT]
RATE_RATIOS = [
    ("store", lambda r: STORE_LABEL.get(r.get("backend"), r.get("backend", ""))),
    col("requests/admission ×", "requests_per_admission_vs_poll", 2),
    col("client CPU/admission ×", "client_cpu_us_per_op_vs_poll", 2),
    col("server CPU/admission ×", "server_cpu_us_per_op_vs_poll", 2)]


def rate_markdown(doc, intro):
    rows = sorted(doc["scenarios"], key=lambda r: [b for b, _ in STORES].index(r.get("backend"))
                  if r.get("backend") in STORE_LABEL else len(STORES))
    command = doc["machine"].get("command", "scripts/bench.sh --rate")
    out = ["# corolock::rate_limiter against a fixed poll\n",
           intro or f"Produced by `{command}`: `rate_bench` on each store in turn, its modes "
           "interleaved; every figure the median of its repetitions, the judged ones the worst "
           "repetition's. How to read the figures: `bench/README.md`, \"Rate limiter\".\n",
           machine_line(doc["machine"]),
           "## Accuracy and cost per admission\n",
           table(rows, RATE_COLUMNS),
           "## corolock (`acquire`) ÷ the poll, same store, same run\n",
           table([r for r in rows if r["mode"] == "acquire"], RATE_RATIOS)]
    targets = [(r, t) for r in rows for t in r.get("targets", [])]
    if targets:
        out.append("## Targets\n")
        out.append("".join(f"- {STORE_LABEL.get(r.get('backend'), '')} `{r['mode']}`: "
                           f"{target_text(t)}\n" for r, t in targets))
    return "\n".join(out)


# ---- merge --herd: store requests per hand-off against the waiters (scripts/bench.sh --herd) ----

STORE_COL = ("store", lambda r: STORE_LABEL.get(r.get("backend"), r.get("backend", "")))
HERD_COLUMNS = [
    STORE_COL, ("kind", lambda r: r.get("mode", "")), ("clients", lambda r: r.get("layout", "")),
    col("waiters", "waiters", 0),
    ("hand-offs", lambda r: fmt_num(r.get("ops")) + (" **timed out**" if r.get("timed_out") else "")),
    ("requests/hand-off", lambda r: fmt_num(r.get("requests_per_handoff"),
                                            2 if (r.get("requests_per_handoff") or 0) < 10 else 1)),
    col("× fewest waiters", "requests_per_handoff_vs_first", 2)]
HERD_DETAILS = [
    STORE_COL, ("kind", lambda r: r.get("mode", "")), ("clients", lambda r: r.get("layout", "")),
    col("waiters", "waiters", 0), col("at rest /hand-off", "rest_per_handoff", 2),
    col("Redis: requests sent/hand-off", "client_requests_per_handoff", 2),
    col("ZooKeeper: packets sent/hand-off", "zk_packets_sent_per_handoff", 1),
    col("ZooKeeper: watches", "zk_watches", 0), col("ms/hand-off", "ms_per_handoff", 2),
    col("span s", "seconds", 2), col("settle s", "settle_s", 1), col("repetitions", "repetitions", 0)]


def by_store(rows, then):
    """`rows` in the stores' order (STORES), then by the tuple then(row)."""
    order = [b for b, _ in STORES]
    return sorted(rows, key=lambda r: (
        order.index(r["backend"]) if r.get("backend") in order else len(order),) + then(r))


def page(doc, flag, title, intro, produced, sections):
    """A results page: its title, the paragraph on how it was produced (`intro`, or "Produced by
    <the command>: " + `produced`), the machine, then `sections`."""
    command = doc["machine"].get("command", f"scripts/bench.sh {flag}")
    return "\n".join([title + "\n", intro or f"Produced by `{command}`: " + produced + "\n",
                      machine_line(doc["machine"])] + sections)


def herd_markdown(doc, intro):
    rows = by_store(doc["scenarios"], lambda r: (
        r.get("mode", ""), r.get("layout") == "a client per waiter", r.get("waiters", 0)))
    return page(
        doc, "--herd", "# No herd: store requests per hand-off against the number of waiters", intro,
        "`herd_bench` on each store in turn (what it counts and "
        "how: the opening comment of `bench/herd_bench.cpp`). A holder, W waiters queued on one "
        "lock, then 50 hand-offs (each holder 1 ms), counted by the server: Redis `INFO "
        "commandstats` (every call, those inside scripts too, but INFO and idle PINGs), ZooKeeper "
        "`mntr` `zk_packets_received`, MariaDB `Questions`. `× fewest waiters`: requests per "
        "hand-off ÷ the same kind and clients' row with the fewest waiters (1: no herd). `4 "
        "clients`: the waiters share 4 clients (a client's waiters of one lock share one bid at "
        "the store); `a client per waiter`: the store sees every waiter. Every figure the median "
        "of its repetitions.",
        ["## Requests per hand-off\n",
         table(rows, HERD_COLUMNS),
         "## Details\n",
         "`at rest /hand-off`: the count's rate with the waiters settled (keep-alives, queue "
         "refreshes) times the span, per hand-off — included above, not subtracted.\n",
         table(rows, HERD_DETAILS)])


# ---- merge --failover: an election's failover after its leader is killed (bench.sh --failover) ----

FAILOVER_COLUMNS = [
    STORE_COL, ("election", lambda r: r.get("mode", "")), col("timeout ms", "timeout_ms", 0),
    col("min ms", "failover_min_ms", 1), col("mean ms", "failover_mean_ms", 1),
    col("p50 ms", "failover_p50_ms", 1), col("max ms", "failover_max_ms", 1),
    col("p50 ÷ timeout", "failover_vs_timeout", 2), col("rounds", "rounds", 0)]


def failover_markdown(doc, intro):
    rows = by_store(doc["scenarios"], lambda r: (not r.get("mode", "").startswith("corolock"),))
    return page(
        doc, "--failover", "# Election failover: the leader's process killed, the next leader's campaign complete",
        intro, "`failover_bench` on each store in turn, and the peers "
        "of `bench/peers/failover_peer.py` (what each does and why: their opening comments). A "
        "round: a leader process leads, a follower in another process campaigns (it waits), the "
        "leader is killed (SIGKILL: no resignation, its connections closed by the kernel), and the "
        "figure is kill → the follower leads. The same timeout on every store: Redis the lock's "
        "lease (renewed by the leader while it lived), ZooKeeper the session timeout, etcd the "
        "lease's TTL; the SQL stores free a session's locks when its connection closes. Each "
        "figure over the rounds of one run.",
        ["## Failover\n", table(rows, FAILOVER_COLUMNS)])


def merge(a):
    doc = {"machine": {"cores": os.cpu_count(), "redis_version": None},
           "ceiling": {"ping_rtt_us": None, "evalsha_one_client_per_s": None,
                       "evalsha_pipelined_per_s": None},
           "scenarios": []}
    for part in a.parts:
        with open(part) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                obj = json.loads(line)
                if obj["kind"] == "scenario":
                    doc["scenarios"].append(obj["row"])
                elif obj["kind"] in ("machine", "ceiling"):
                    doc[obj["kind"]][obj["key"]] = obj["value"]
                else:
                    sys.exit(f"{part}:{n}: unknown kind {obj['kind']!r}")
    counts = {True: 0, False: 0, None: 0}
    for r in doc["scenarios"]:
        for t, met in judge(r, doc["scenarios"]):
            if t["kind"] == "absolute" or t.get("ratio") is not None:
                counts[met] += 1
                print(f"target: {r['name']} ({r['mode']}, {r['processes']}x{r['coroutines']}): "
                      f"{target_text(t)}")
    print(f"targets: {counts[True]} met, {counts[False]} missed, {counts[None]} not measured\n")
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
    stem = os.path.splitext(os.path.basename(a.json))[0]
    if a.failover:
        md = failover_markdown(doc, a.intro)
    elif a.herd:
        md = herd_markdown(doc, a.intro)
    elif a.rate:
        md = rate_markdown(doc, a.intro)
    elif a.stores:
        made = stores_chart(doc, a.charts, stem) if a.charts else []
        md = stores_markdown(doc, made, a.intro)
    else:
        made = charts(doc, a.charts, stem) if a.charts else []
        md = markdown(doc, made, a.intro)
    with open(a.md, "w") as f:
        f.write(md)
    print(md)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("import-rb")
    i.add_argument("--out", required=True)
    i.add_argument("--name", required=True)
    i.add_argument("--connections", type=int, default=50)
    i.add_argument("--pipeline", type=int, default=1)
    i.add_argument("--keys", type=int, default=1)
    i.add_argument("--requests", type=int, default=0)
    i.add_argument("--command", default="")
    i.add_argument("--ceiling", action="append", default=[])
    i.add_argument("csv", nargs="+")
    s = sub.add_parser("set")
    s.add_argument("--out", required=True)
    s.add_argument("what", choices=["machine", "ceiling"])
    s.add_argument("key")
    s.add_argument("value")
    m = sub.add_parser("merge")
    m.add_argument("--json", required=True)
    m.add_argument("--md", required=True)
    m.add_argument("--charts", help="directory for the PNG charts")
    m.add_argument("--intro", help="the paragraph that says how the results were produced")
    m.add_argument("--stores", action="store_true", help="the stores' comparison (bench.sh --stores)")
    m.add_argument("--rate", action="store_true",
                   help="the rate limiter against a fixed poll (bench.sh --rate): no charts")
    m.add_argument("--herd", action="store_true",
                   help="store requests per hand-off against the waiters (bench.sh --herd): no charts")
    m.add_argument("--failover", action="store_true",
                   help="an election's failover after its leader is killed (bench.sh --failover): no charts")
    m.add_argument("parts", nargs="+")
    a = p.parse_args()
    {"import-rb": import_rb, "set": set_entry, "merge": merge}[a.cmd](a)


if __name__ == "__main__":
    main()
