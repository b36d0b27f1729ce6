#!/usr/bin/env bash
# Client CPU per pipelined request: connection_bench (ping_pipelined and set_pipelined at 50, 200
# and 1 000 coroutines, one repetition each) and redis-benchmark -P 16 -c 50 (-n 3 000 000 PING,
# then SET, its user + system seconds by `time`), taking turns against one private redis-server,
# ROUNDS times. With two build directories, the two connection_bench binaries take turns too
# (A B, then B A, ...): a before/after in one run, on the same server, under the same load.
# Prints each row's medians and its ratio to redis-benchmark's CPU per request in the same run;
# the raw JSON lines and redis-benchmark outputs are kept in OUT_DIR.
# Usage: scripts/bench_client_cpu.sh OUT_DIR ROUNDS BUILD_DIR [OTHER_BUILD_DIR]
#   (the binaries are BUILD_DIR/bench/connection_bench; build them first, Release:
#    BUILD_DIR=... BUILD_TYPE=Release scripts/build.sh connection_bench)
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
(($# >= 3)) || { echo "usage: $0 OUT_DIR ROUNDS BUILD_DIR [OTHER_BUILD_DIR]" >&2; exit 2; }
out=$1 rounds=$2
shift 2
builds=("$@")
for b in "${builds[@]}"; do
  [[ -x $b/bench/connection_bench ]] || { echo "no $b/bench/connection_bench" >&2; exit 2; }
done
mkdir -p "$out"
# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
start_redis >/dev/null

TIMEFORMAT='%U %S'
for ((r = 1; r <= rounds; r++)); do
  order=("${!builds[@]}")
  ((r % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
  for i in "${order[@]}"; do
    "${builds[i]}/bench/connection_bench" "$REDIS_URL" --scenarios ping_pipelined,set_pipelined \
      --coroutines 50,200,1000 --repetitions 1 --out "$out/build$i.jsonl" >/dev/null
  done
  for t in ping_mbulk set; do
    { time redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -P 16 -c 50 -n 3000000 -t "$t" --csv \
      >"$out/rb.$t.$r.csv"; } 2>"$out/rb.$t.$r.cpu"
  done
  log "round $r of $rounds done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done

python3 - "$out" "${builds[@]}" <<'EOF'
import glob, json, os, statistics as st, sys
out, builds = sys.argv[1], sys.argv[2:]
rb = {}
for t, row in (("ping_mbulk", "ping_pipelined"), ("set", "set_pipelined")):
    for f in sorted(glob.glob(os.path.join(out, f"rb.{t}.*.cpu"))):
        user, system = map(float, open(f).read().split())
        rb.setdefault(row, []).append((user + system) / 3e6 * 1e6)
for row, v in rb.items():
    print(f"redis-benchmark {row}: CPU {st.median(v):.3f} us a request (median of {len(v)})")
rows = {}
for i, b in enumerate(builds):
    for line in open(os.path.join(out, f"build{i}.jsonl")):
        j = json.loads(line)
        if j.get("kind") == "scenario":
            r = j["row"]
            rows.setdefault((r["name"], r["coroutines"]), {}).setdefault(i, []).append(
                (r["client_cpu_us_per_op"], r["ops_per_s"]))
print("row | " + " | ".join(f"{b}: CPU us/request (x redis-benchmark), requests/s" for b in builds))
for key in sorted(rows):
    cells = []
    for i in range(len(builds)):
        cpu = st.median(x[0] for x in rows[key][i])
        ops = st.median(x[1] for x in rows[key][i])
        cells.append(f"{cpu:.2f} ({cpu / st.median(rb[key[0]]):.2f}x), {ops:,.0f}")
    print(f"{key[0]} x{key[1]} | " + " | ".join(cells))
EOF
