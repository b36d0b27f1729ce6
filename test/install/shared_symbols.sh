#!/usr/bin/env bash
# Prints the symbols that both files define strongly (nm types T, D, R, B: code and data, not the
# weak copies of inline functions and templates every object may carry): the code and data of
# <library> that <executable> took in. Used by run_install_test.cmake as
#   shared_symbols.sh <nm> <library> <executable>
set -euo pipefail
nm=$1
strong() { "$nm" -g --defined-only -P "$1" 2>/dev/null | awk '$2 ~ /^[TDRB]$/ { print $1 }' | sort -u; }
comm -12 <(strong "$2") <(strong "$3")
