// The torture run's verdict on overlaps: sections as the workers recorded them, the stretches of
// time a holder could not see (its process stopped, the lock server restarted), and the sweep that
// says whether untold holders ever held more than the lock allows. Its own file so that its excuses
// are unit-tested (test/unit/overlap_sweep.cpp): each one can hide a defect if it is too wide.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace corolock::test::torture {

/// One critical section as a worker recorded it (times on the resource server's clock).
struct section {
  std::int64_t entry_us = 0, exit_us = 0;
  char kind = 'x'; // 'x' exclusive (the mutex, a writer), 'r' a reader, 'p' semaphore permits
  std::int64_t permits = 1;
  std::uint64_t token = 0;
  bool told = false;
  std::uint64_t fence_at_exit = 0; // the highest writer token accepted when it ended
  std::int64_t told_us = 0;         // when the holder first knew its lease was lost; 0: never
  std::int64_t acquired_us = 0;     // when its acquire_for completed
  pid_t pid = -1;
};

/// A stretch of wall-clock time in microseconds, and whose (a stopped process's pid; 0: the
/// restart of the lock server).
struct window {
  pid_t pid = 0;
  std::int64_t from_us = 0, to_us = 0;
  /// Entries after this are not excused by it (a fault the holder learns of later, but soon).
  std::int64_t entries_until_us = std::numeric_limits<std::int64_t>::max();
};

/// How many held at once, swept over the resource server's clock. Two sections overlap when each
/// began before the other ended: a holder's exit is read before its release and its successor's
/// entry after its acquisition, so a hand-over never looks like an overlap.
///
/// Every section is swept. When one enters, a section already inside counts against it unless
/// its holder could rightly be overlapped by then: it had been told its lease was lost (told_us at
/// or before the entry: told in time, not at its release long after), or its process was stopped
/// meanwhile, or the entrant's own process was stopped between its acquisition and its entry (or
/// the entrant was told before it entered), or the lock server restarted meanwhile (faults the
/// library cannot see; only the fence protects from those holders).
struct overlap_summary {
  std::size_t judged = 0;                // sections swept
  std::size_t told = 0;                  // of them, of holders told at some point
  std::size_t exclusive = 0, shared = 0; // of them: exclusive ones, readers or permits
  std::int64_t max_sections = 0;         // the most sections inside at once, excused or not
  std::int64_t max_permits = 0;          // the largest sum of permits at once, not excused
  std::int64_t max_readers = 0;          // the most readers inside at once
  std::uint64_t excused_told = 0;        // entries beside a holder told in time
  std::uint64_t excused_blind = 0;       // entries beside a holder stopped or across the restart
  std::uint64_t entrants_told = 0;       // entries by a holder told before it entered
  std::uint64_t violations = 0;          // entries that broke the rule
  std::string first;                     // the first of them: who was inside
};

/// `capacity`: the permits that may be inside at once; an exclusive section must be alone.
/// `blind`: the stops of worker processes (by pid), a restart of the lock server that loses its
/// locks and the kills of SQL sessions (pid 0).
overlap_summary sweep_overlaps(const std::vector<section>& all, std::int64_t capacity,
                               const std::vector<window>& blind);

} // namespace corolock::test::torture
