#!/usr/bin/env bash
# The one place packages are installed (Debian 12). Installs only what is missing, so a machine
# that has everything costs one dpkg-query and no apt-get at all.
# Usage: scripts/deps.sh [--fuzz] [--bench] [--docs]
#   --fuzz   adds clang and libFuzzer for the fuzz targets.
#   --docs   adds Doxygen for the API reference (scripts/docs.sh).
#   --bench  adds what scripts/bench.sh needs beyond the build: gnuplot and the font its charts name
#            (not matplotlib: its Debian dependencies want Boost 1.74, which conflicts with 1.81),
#            redis-py for Debian's /usr/bin/python3 (the redis-py peer), the other stores' peers
#            (kazoo for ZooKeeper, etcd3 for etcd, PyMySQL for MariaDB, psycopg2 for PostgreSQL:
#            bench.sh --stores),
#            Node.js and npm, and the Node peers (`npm ci` in bench/peers from its committed
#            package-lock.json).
set -euo pipefail

packages=(
  build-essential           # g++ 12, make
  cmake
  ccache
  pkg-config
  libboost1.81-dev          # Asio, System (header-only) and the other Boost headers
  libboost-test1.81-dev     # Boost.Test, shared library
  libboost-json1.81-dev     # bench/: results as JSON
  libboost-program-options1.81-dev  # bench/: command lines
  libfmt-dev
  libssl-dev
  redis-server              # the tests start their own servers on free ports; the system one is unused
  redis-tools               # redis-cli, redis-benchmark
  redis-sentinel
  zookeeper                 # the ZooKeeper tests start private servers (java ... ZooKeeperServerMain)
  default-jre-headless      # its Java runtime: the smallest Debian offers (no GUI libraries)
  # The SQL backends' tests start private servers (test/support/{mariadb,postgres}_server) as child
  # processes; the -core packages hold the server binaries without a system service (mariadb-server
  # would pull galera and, without policy-rc.d, start a server on 3306).
  mariadb-server-core       # mariadbd, mariadb-install-db
  mariadb-client-core       # mariadb, mariadb-admin
  libmariadb-dev            # Connector/C 3.3 (non-blocking API), pkg-config libmariadb
  postgresql-15             # postgres, initdb, pg_isready (no cluster is created by our fixtures)
  libpq-dev                 # libpq, pkg-config libpq
  # postgres_pooler's fixture (test/support/pgbouncer_server) starts private pgbouncers in front of
  # the private PostgreSQL; the package's own service (127.0.0.1:6432) is stopped and disabled below.
  pgbouncer
  iproute2                  # ss: the SQL suites read our socket's keepalive timer
  # The etcd tests start private members (test/support/etcd_server): the package's own service is
  # stopped and disabled below, as pgbouncer's. etcdctl (etcd-client) revokes a lease as an admin.
  etcd-server
  etcd-client
)
bench=0
for arg in "$@"; do
  case $arg in
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    --docs) packages+=(doxygen) ;;
    --bench)
      bench=1
      # gnuplot-nox: no X; its pngcairo terminal draws bench/report.py's charts.
      packages+=(gnuplot-nox fonts-dejavu-core python3-redis)
      # The peers of the other stores (bench/peers/store_locks.py), Debian's for /usr/bin/python3.
      packages+=(python3-kazoo python3-etcd3 python3-pymysql python3-psycopg2)
      # Node.js: Debian's, unless a node and npm are already on the machine (another build of
      # node, e.g. from a vendor repository, conflicts with Debian's npm package).
      if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        packages+=(nodejs npm)
      fi
      ;;
    *) echo "usage: $0 [--fuzz] [--bench] [--docs]" >&2; exit 2 ;;
  esac
done

# The Node peers of the benchmark: exactly the versions of the committed lockfile.
npm_peers() {
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench/peers
  if [[ -f $dir/package-lock.json && ( ! -f $dir/node_modules/.package-lock.json ||
    $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ) ]]; then
    echo "deps.sh: npm ci in $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  if ((bench)); then npm_peers; fi
  exit 0
fi

echo "deps.sh: installing ${missing[*]}" >&2
if ((EUID == 0)); then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "deps.sh: not root and no sudo; please install: ${missing[*]}" >&2
  exit 1
fi
# Wait for a concurrent apt/dpkg (another checkout running this script) rather than fail.
apt_opts=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${apt_opts[@]}" update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"
# Debian's pgbouncer enables a system service and, where a policy-rc.d does not forbid it, starts it
# (listening on 127.0.0.1:6432). The tests start their own: the system one is stopped and disabled.
if [[ " ${missing[*]} " == *" pgbouncer "* ]]; then
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now pgbouncer.service || true
  else
    "${sudo[@]}" rm -f /etc/systemd/system/multi-user.target.wants/pgbouncer.service
    "${sudo[@]}" invoke-rc.d pgbouncer stop >/dev/null 2>&1 || true
    "${sudo[@]}" update-rc.d pgbouncer disable >/dev/null 2>&1 || true
  fi
fi
# etcd-server the same: a system member on 2379/2380 would be a stray server beside the tests'.
if [[ " ${missing[*]} " == *" etcd-server "* ]]; then
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now etcd.service || true
  else
    "${sudo[@]}" rm -f /etc/systemd/system/multi-user.target.wants/etcd.service
    "${sudo[@]}" invoke-rc.d etcd stop >/dev/null 2>&1 || true
    "${sudo[@]}" update-rc.d etcd disable >/dev/null 2>&1 || true
  fi
fi
if ((bench)); then npm_peers; fi
