#!/usr/bin/env bash
# Builds the RESP parser fuzzer with clang (ASan + UBSan + libFuzzer) and runs it for a fixed number
# of inputs. Everything it writes (build, seeds, corpus, crash artifacts) stays in the build dir.
# Usage: scripts/fuzz.sh [runs]      default 1000000; exits non-zero on a crash or a mismatch.
# Env:   COROLOCK_FUZZ_BUILD_DIR     build dir (default <repo>/build-fuzz)
set -euo pipefail

runs=${1:-1000000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${COROLOCK_FUZZ_BUILD_DIR:-$root/build-fuzz}

cmake -S "$root" -B "$build" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOROLOCK_BUILD_FUZZ=ON -DCOROLOCK_BUILD_TESTS=ON \
  -DCOROLOCK_BUILD_EXAMPLES=OFF -DCOROLOCK_BUILD_BENCH=OFF
cmake --build "$build" --target resp_parser_fuzz -j"$(nproc)"

work=$build/fuzz/resp_parser
seeds=$work/seeds
corpus=$work/corpus # grows across runs: later runs start from what earlier ones found
mkdir -p "$seeds" "$corpus" "$work/artifacts"

# A seed is two config bytes (see resp_parser_fuzz.cpp: limits bit + fragment size, split seed)
# followed by RESP bytes.
seed() { printf '%b' "$2" > "$seeds/$1"; }
seed simple        '\x00\x00+OK\r\n-ERR unknown command\r\n:42\r\n:-9223372036854775808\r\n'
seed bulk          '\x0e\x11$5\r\nhello\r\n$0\r\n\r\n$-1\r\n$4\r\na\r\nb\r\n'
seed array         '\x20\x05*3\r\n$3\r\nSET\r\n*-1\r\n*2\r\n:1\r\n*0\r\n'
seed resp3_scalars '\x06\x09_\r\n,3.14\r\n,inf\r\n,-inf\r\n,nan\r\n#t\r\n#f\r\n(12345678901234567890\r\n'
seed resp3_blobs   '\x40\x21!21\r\nSYNTAX invalid syntax\r\n=15\r\ntxt:Some string\r\n'
seed map_set_push  '\x10\x33%2\r\n+a\r\n:1\r\n+b\r\n~1\r\n#f\r\n>3\r\n+message\r\n+ch\r\n$2\r\nhi\r\n'
seed attribute     '\x08\x44|1\r\n+key\r\n%1\r\n+a\r\n,0.5\r\n*2\r\n|0\r\n:1\r\n:2\r\n'
seed tight_limits  '\x01\x55*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n$17\r\n+0123456789abcdef\r\n'
seed streamed      '\x02\x66$?\r\n;4\r\nHell\r\n;0\r\n'

dict=$work/resp.dict
cat > "$dict" <<'DICT'
"\x0d\x0a"
"$-1\x0d\x0a"
"*-1\x0d\x0a"
"_\x0d\x0a"
"#t\x0d\x0a"
",inf\x0d\x0a"
",nan\x0d\x0a"
"*2\x0d\x0a"
"%1\x0d\x0a"
"|1\x0d\x0a"
"~1\x0d\x0a"
">2\x0d\x0a"
"$3\x0d\x0a"
"=8\x0d\x0atxt:"
"!3\x0d\x0a"
"+OK\x0d\x0a"
":-1\x0d\x0a"
DICT

cd "$work" # libFuzzer may drop files in the working directory
start=$SECONDS
"$build/test/fuzz/resp_parser_fuzz" -runs="$runs" -max_len=4096 -timeout=10 \
  -dict="$dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$corpus" "$seeds"
echo "fuzz.sh: $runs runs finished without a crash in $((SECONDS - start)) s"
