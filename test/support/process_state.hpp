// What the server fixtures share about their processes: whether one is stopped (SIGSTOP), for
// pause()/resume(), read from /proc; and the sweep of directories their dead owners left.
#pragma once

#include <sys/types.h>

#include <string>

namespace corolock::test {

/// The state letter of /proc/<pid>/stat ('R', 'S', 'T' for stopped ...), '?' if unreadable.
[[nodiscard]] char process_state(pid_t pid);
/// Waits (up to 5 s) until the process is stopped (`stopped`) or runs again.
void wait_for_state(pid_t pid, bool stopped);

/// A test killed with SIGKILL takes its servers along (PR_SET_PDEATHSIG) but leaves their
/// directories behind: removes those under $TMPDIR (or /tmp) named `<prefix>*` whose `owner` file
/// names a process that no longer exists. Each fixture calls it once per test process.
void remove_orphaned_dirs(const std::string& prefix);

} // namespace corolock::test
