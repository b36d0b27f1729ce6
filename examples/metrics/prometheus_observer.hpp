// prometheus_observer: a corolock::lock_observer that counts a client's lock events as Prometheus
// metrics, and render()s them in the text exposition format 0.0.4 (what GET /metrics answers).
//
// Series, per lock name and store: corolock_acquisitions_total{outcome="acquired|failed|taken"},
// corolock_lost_total{reason}, corolock_renewals_total, and the histograms corolock_wait_seconds (of
// the acquisitions that got the lock: a failed one mostly waited out its own deadline) and
// corolock_hold_seconds (to the release or the loss); per store, the gauge
// corolock_store_unreachable (1 after `unreachable`, 0 after `reachable`).
//
// Not thread-safe: on_event runs on the client's executor, and render() must run there too (as the
// example's HTTP server does, on the same single-threaded io_context). Called from elsewhere, post
// render() to that executor, or guard both with a std::mutex.
#pragma once

#include <corolock/error.hpp>
#include <corolock/observer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>

class prometheus_observer final : public corolock::lock_observer {
public:
  /// The cardinality cap: at most `max_names` lock names get series of their own; the events of
  /// any further name are counted under name="_other" (a program that locks "order:<id>" would
  /// otherwise add series without bound, each costing Prometheus memory for as long as it is kept).
  /// A lock of your own named "_other" would share those series: name none so.
  explicit prometheus_observer(std::size_t max_names = 100) : max_names_(max_names) {}

  void on_event(const corolock::lock_event& e) noexcept override try {
    using kind = corolock::lock_event::kind;
    const std::string store = "store=\"" + escape(std::string(e.store)) + '"';
    unreachable_.try_emplace(store, 0); // a store's gauge exists (0) from its first event on
    if (e.what == kind::unreachable || e.what == kind::reachable)
      unreachable_[store] = e.what == kind::unreachable ? 1 : 0;
    if (e.what == kind::acquiring || e.what == kind::unreachable || e.what == kind::reachable)
      return; // an acquisition is counted at its end: exactly one of acquired, failed, taken
    const std::string lock = "name=\"" + escape(capped(e.name)) + "\"," + store;
    if (e.what == kind::acquired || e.what == kind::failed || e.what == kind::taken) {
      const char* outcome = e.what == kind::acquired ? "acquired" : e.what == kind::failed ? "failed" : "taken";
      ++acquisitions_[lock + ",outcome=\"" + outcome + '"'];
    }
    if (e.what == kind::acquired)
      wait_[lock].observe(e.waited);
    if (e.what == kind::released || e.what == kind::lost)
      hold_[lock].observe(e.held);
    if (e.what == kind::lost)
      ++lost_[lock + ",reason=\"" + reason(e.ec) + '"'];
    if (e.what == kind::renewed)
      ++renewals_[lock];
  } catch (...) {
    // Out of memory: a metric missed rather than std::terminate (on_event must not throw).
  }

  /// The exposition text, every family with its HELP and TYPE lines.
  std::string render() const {
    std::ostringstream out;
    out.precision(15); // sums in full (the default 6 digits would round them); counts are integers
    family(out, "corolock_acquisitions_total", "counter", "Acquisitions ended, by outcome.", acquisitions_);
    family(out, "corolock_lost_total", "counter", "Held locks lost, by reason.", lost_);
    family(out, "corolock_renewals_total", "counter", "Lease renewals the store confirmed.", renewals_);
    family(out, "corolock_store_unreachable", "gauge", "1 while the store does not answer.", unreachable_);
    family(out, "corolock_wait_seconds", "histogram", "Waits of the acquisitions that got the lock.", wait_);
    family(out, "corolock_hold_seconds", "histogram", "How long locks were held, to release or loss.", hold_);
    return out.str();
  }

private:
  struct histogram {
    static constexpr std::array<double, 8> bounds{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
    std::array<std::uint64_t, bounds.size()> at_most{}; // cumulative, as Prometheus's buckets are
    double sum = 0;
    std::uint64_t count = 0; // all of them: the le="+Inf" bucket too
    void observe(std::chrono::steady_clock::duration d) {
      const double s = std::chrono::duration<double>(d).count();
      for (std::size_t i = 0; i < bounds.size(); ++i)
        at_most[i] += s <= bounds[i] ? 1 : 0;
      sum += s;
      ++count;
    }
  };

  /// The name's label: its own while fewer than max_names_ names have one, else "_other". A name is
  /// never forgotten: a series that vanished and came back would read as a counter reset.
  std::string capped(const std::string& name) {
    if (names_.count(name) == 0 && names_.size() >= max_names_)
      return "_other";
    names_.insert(name);
    return name;
  }
  /// A fixed word per error, not ec.message(): the label's values must stay few.
  static const char* reason(const boost::system::error_code& ec) {
    using corolock::error;
    return ec == error::lease_lost ? "lease_lost" : ec == error::session_expired ? "session_expired"
         : ec == error::timeout    ? "timeout"    : ec == error::closed          ? "closed" : "other";
  }
  /// A label value's escapes (the format's: backslash, double quote, newline).
  static std::string escape(const std::string& v) {
    std::string out;
    for (char c : v) {
      if (c == '\\' || c == '"')
        out += '\\';
      out += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    return out;
  }
  template <typename Map>
  static void family(std::ostream& out, const char* name, const char* type, const char* help,
                     const Map& series) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    for (const auto& [labels, v] : series)
      sample(out, name, labels, v);
  }
  template <typename Number>
  static void sample(std::ostream& out, const std::string& name, const std::string& labels, Number v) {
    out << name << '{' << labels << "} " << v << '\n';
  }
  static void sample(std::ostream& out, const std::string& name, const std::string& labels,
                     const histogram& h) {
    for (std::size_t i = 0; i < h.bounds.size(); ++i)
      out << name << "_bucket{" << labels << ",le=\"" << h.bounds[i] << "\"} " << h.at_most[i] << '\n';
    sample(out, name + "_bucket", labels + ",le=\"+Inf\"", h.count);
    sample(out, name + "_sum", labels, h.sum);
    sample(out, name + "_count", labels, h.count);
  }

  std::size_t max_names_;
  std::set<std::string> names_; // the names that have series of their own
  // Each series keyed by its labels' text: name="orders",store="redis",outcome="acquired".
  std::map<std::string, std::uint64_t> acquisitions_, lost_, renewals_;
  std::map<std::string, histogram> wait_, hold_;
  std::map<std::string, int> unreachable_; // store="redis"
};
