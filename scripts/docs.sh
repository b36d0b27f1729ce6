#!/usr/bin/env bash
# Generates the API reference from the public headers with Doxygen (installed by deps.sh --docs)
# into $BUILD_DIR/docs/html, with the README, docs/ and CONTRIBUTING.md as pages. Fails on any
# Doxygen warning: an undocumented public name, an undocumented parameter or a broken reference in
# a public header is a bug in the documentation.
# Usage: scripts/docs.sh        then open build/docs/html/index.html
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$COROLOCK_ROOT/scripts/deps.sh" --docs
out=$BUILD_DIR/docs
mkdir -p "$out"
warnings=$out/warnings.log
log "doxygen: include/corolock -> $out/html"
# The configuration is here rather than in a Doxyfile: only what differs from Doxygen's defaults.
# examples/ is read for its READMEs alone (docs/examples.md links them); its headers are programs,
# not API. The detail namespace is private (Asio's convention) and stays out of the reference; detail/async.hpp
# is read for corolock::default_token, the public default token defined there beside the machinery.
# WARN_IF_UNDOCUMENTED needs EXTRACT_ALL off (with it on Doxygen never warns): every public name
# of include/corolock must carry a comment, and each asynchronous operation its contract.
(
  cd "$COROLOCK_ROOT"
  doxygen - <<CONFIG
PROJECT_NAME           = corolock
PROJECT_BRIEF          = "Distributed locks for Boost.Asio coroutines on Redis, ZooKeeper, MariaDB/MySQL and PostgreSQL"
OUTPUT_DIRECTORY       = $out
INPUT                  = include/corolock README.md docs CONTRIBUTING.md bench/README.md examples
USE_MDFILE_AS_MAINPAGE = $COROLOCK_ROOT/README.md
RECURSIVE              = YES
FILE_PATTERNS          = *.hpp *.md
EXCLUDE_PATTERNS       = */examples/*.hpp
EXCLUDE_SYMBOLS        = detail detail::* corolock::detail corolock::detail::*
STRIP_FROM_PATH        = $COROLOCK_ROOT
STRIP_FROM_INC_PATH    = $COROLOCK_ROOT/include
FULL_PATH_NAMES        = YES
JAVADOC_AUTOBRIEF      = YES
EXTRACT_ALL            = NO
EXTRACT_PRIVATE        = NO
HIDE_UNDOC_MEMBERS     = NO
WARN_IF_UNDOCUMENTED   = YES
WARN_IF_DOC_ERROR      = YES
WARN_NO_PARAMDOC       = NO
WARN_LOGFILE           = $warnings
QUIET                  = YES
GENERATE_LATEX         = NO
GENERATE_HTML          = YES
HAVE_DOT               = NO
MACRO_EXPANSION        = YES
PREDEFINED             = BOOST_ASIO_HAS_CO_AWAIT=1
CONFIG
)
if [[ -s $warnings ]]; then
  sed "s|$COROLOCK_ROOT/||" "$warnings" >&2
  log "doxygen: $(wc -l <"$warnings") warning lines (see above): failing"
  exit 1
fi
log "doxygen: no warnings; open $out/html/index.html"
