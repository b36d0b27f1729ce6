# shellcheck shell=bash
# What the benchmark scripts record about the machine and the checkout, as `machine` entries of a
# results part (bench/report.py set). Sourced, not run; needs REPORT (the report.py command) set.
#
#   record_machine PART [quick]   # cores, cpu_model, kernel, date_utc, commit (+dirty)[, quick]
#   set_machine PART KEY VALUE    # one more entry

set_machine() {
  local part=$1
  shift
  "${REPORT[@]}" set --out "$part" machine "$@"
}

record_machine() {
  local part=$1 commit
  set_machine "$part" cores "$(nproc)"
  set_machine "$part" cpu_model \
    "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
  set_machine "$part" kernel "$(uname -sr)"
  if (($# > 1)); then
    set_machine "$part" quick "$( (($2)) && echo true || echo false)"
  fi
  set_machine "$part" date_utc "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  commit=$(git -C "$COROLOCK_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [[ -n $(git -C "$COROLOCK_ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    commit+="+dirty"
  fi
  set_machine "$part" commit "$commit"
}
