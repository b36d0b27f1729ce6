// Whether a child is stopped (SIGSTOP), for the fixtures' pause()/resume(): read from /proc.
#pragma once

#include <sys/types.h>

namespace corolock::test {

/// The state letter of /proc/<pid>/stat ('R', 'S', 'T' for stopped ...), '?' if unreadable.
[[nodiscard]] char process_state(pid_t pid);
/// Waits (up to 5 s) until the process is stopped (`stopped`) or runs again.
void wait_for_state(pid_t pid, bool stopped);

} // namespace corolock::test
