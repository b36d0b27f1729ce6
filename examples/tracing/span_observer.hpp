// span_observer: a corolock::lock_observer that turns a client's lock events into spans shaped as
// OpenTelemetry's: "lock.acquire" from an acquisition's start to its end (acquired, taken or
// failed), and "lock.hold" from its acquisition to its release or loss. Each finished span goes to
// a callback, where you hand it to your tracer (its start and end as the span's timestamps, the
// status, the attributes as they are); this file needs no OpenTelemetry.
//
// on_event runs on the client's executor, one event at a time, in order, and calls
// the callback there.
#pragma once

#include <corolock/observer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

struct span {
  std::string name; // "lock.acquire" or "lock.hold"
  std::chrono::system_clock::time_point start, end;
  bool ok = true;            // OpenTelemetry's status: Ok, or Error with `error` as its description
  std::string error;         // the error's message
  std::map<std::string, std::string> attributes; // lock.name, lock.store, lock.type, lock.token, lock.outcome
};

class span_observer final : public corolock::lock_observer {
public:
  explicit span_observer(std::function<void(const span&)> finished) : finished_(std::move(finished)) {}

  // Stateless: an end event carries how long its acquisition waited (`waited`) or its lock was
  // held (`held`), measured by the client, so a span's start is its end minus that — exact even when
  // acquisitions of one name overlap and end out of order (a try or a timeout overtaking a wait).
  // The end is when the event reaches us (posted: a little after it happened; the duration is the
  // client's own). `acquiring` is not needed for spans.
  void on_event(const corolock::lock_event& e) noexcept override try {
    using kind = corolock::lock_event::kind;
    const auto now = std::chrono::system_clock::now();
    switch (e.what) {
    case kind::acquired:
    case kind::taken:
    case kind::failed:
      finish("lock.acquire", e, now - wall(e.waited), now,
             e.what == kind::acquired ? "acquired" : e.what == kind::taken ? "taken" : "failed");
      return;
    case kind::released:
    case kind::lost:
      finish("lock.hold", e, now - wall(e.held), now, e.what == kind::released ? "released" : "lost");
      return;
    default: // acquiring, renewed, unreachable, reachable: not spans
      return;
    }
  } catch (...) {
    // The callback threw, or memory ran out: a span lost rather than std::terminate.
  }

private:
  static std::chrono::system_clock::duration wall(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }
  void finish(const char* name, const corolock::lock_event& e, std::chrono::system_clock::time_point start,
              std::chrono::system_clock::time_point end, const char* outcome) {
    span s{name, start, end, !e.ec && e.what != corolock::lock_event::kind::lost, "", {}};
    if (!s.ok)
      s.error = e.ec.message();
    s.attributes = {{"lock.name", e.name}, {"lock.store", std::string(e.store)},
                    {"lock.type", std::string(e.type)}, {"lock.outcome", outcome}};
    if (e.token != 0)
      s.attributes["lock.token"] = std::to_string(e.token);
    finished_(s);
  }

  std::function<void(const span&)> finished_;
};
