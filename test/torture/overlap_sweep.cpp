#include "overlap_sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace corolock::test::torture {

overlap_summary sweep_overlaps(const std::vector<section>& all, std::int64_t capacity,
                               const std::vector<window>& blind) {
  overlap_summary out;
  struct event {
    std::int64_t at;
    bool entry; // exits first at the same microsecond: a touch is no overlap
    std::size_t index;
  };
  std::vector<event> events;
  for (std::size_t i = 0; i < all.size(); ++i) {
    ++out.judged;
    out.told += all[i].told ? 1 : 0;
    ++(all[i].kind == 'x' ? out.exclusive : out.shared);
    events.push_back({all[i].entry_us, true, i});
    events.push_back({all[i].exit_us, false, i});
  }
  std::sort(events.begin(), events.end(), [](const event& a, const event& b) {
    return std::tie(a.at, a.entry) < std::tie(b.at, b.entry);
  });
  // Whether `sec`, inside since its entry, may be overlapped by an entry at `t`: 1 told in time,
  // 2 stopped or restarted meanwhile, 0 not.
  // A window that ended between the holder's acquisition and its entry counts too: it entered on a
  // grant it could not know was lost, as an entrant stopped so does (below). Seen in a sanitized
  // run: a holder SIGSTOPped 1.8 s right after its grant entered 10 ms after SIGCONT, its lease
  // long gone, and was told 11 ms later; two entries on the permits Redis had freed were counted
  // against it ("4 of 3 permits"), as the window's end was recorded before its entry.
  auto excused = [&](const section& sec, std::int64_t t) {
    if (sec.told_us != 0 && sec.told_us <= t)
      return 1;
    const auto since = sec.acquired_us != 0 ? std::min(sec.acquired_us, sec.entry_us) : sec.entry_us;
    for (const auto& w : blind)
      if ((w.pid == 0 || w.pid == sec.pid) && w.from_us <= t && w.to_us >= since &&
          t <= w.entries_until_us)
        return 2;
    return 0;
  };
  std::set<std::size_t> inside;
  std::int64_t readers = 0;
  for (const auto& e : events) {
    const auto& sec = all[e.index];
    readers += (e.entry ? 1 : -1) * (sec.kind == 'r' ? 1 : 0);
    if (!e.entry) {
      inside.erase(e.index);
      continue;
    }
    // An entrant whose own process was stopped between its acquisition and its entry entered on a
    // grant it could not know was lost (the library cannot run before the resumed code does).
    const bool entrant_stopped = std::any_of(blind.begin(), blind.end(), [&](const window& w) {
      return w.pid == sec.pid && w.from_us <= sec.entry_us && w.to_us >= sec.acquired_us;
    });
    // An entrant told before it entered (lost() read true as its acquisition returned: its process
    // stalled after the library's last look at the grant, its lease over by the clock) is not an
    // untold holder: it entered knowing, as a stopped holder's fenced write does.
    const bool entrant_told = sec.told_us != 0 && sec.told_us <= sec.entry_us;
    out.entrants_told += entrant_told && !entrant_stopped ? 1 : 0;
    // Those inside that count against this entry, and this entry itself.
    std::int64_t permits = sec.permits, exclusive = sec.kind == 'x' ? 1 : 0;
    std::size_t counted = 1;
    std::vector<std::size_t> against;
    for (auto i : inside) {
      switch (entrant_stopped || entrant_told ? 2 : excused(all[i], e.at)) {
      case 1: ++out.excused_told; continue;
      case 2: ++out.excused_blind; continue;
      default: break;
      }
      against.push_back(i);
      permits += all[i].permits;
      exclusive += all[i].kind == 'x' ? 1 : 0;
      ++counted;
    }
    inside.insert(e.index);
    out.max_sections = std::max(out.max_sections, static_cast<std::int64_t>(inside.size()));
    out.max_permits = std::max(out.max_permits, permits);
    out.max_readers = std::max(out.max_readers, readers);
    const bool broken = exclusive > 0 ? counted > 1 : permits > capacity;
    if (broken && out.violations++ == 0) {
      std::vector<std::string> who;
      against.push_back(e.index);
      for (auto i : against)
        who.push_back(fmt::format("{} token {} pid {} x{} [{}, {}] us, told {}", all[i].kind,
                                  all[i].token, all[i].pid, all[i].permits, all[i].entry_us,
                                  all[i].exit_us,
                                  all[i].told_us == 0 ? std::string("never")
                                                      : fmt::format("at {} us", all[i].told_us)));
      out.first = fmt::format("{}", fmt::join(who, "; "));
    }
  }
  return out;
}

} // namespace corolock::test::torture
