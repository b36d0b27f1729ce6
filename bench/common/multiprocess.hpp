// Multi-process benchmarks: the program re-executes itself (/proc/self/exe --worker ...) as N
// worker processes sharing one memory region (a memfd inherited across exec) with the parent:
// a control block, one `Shared` object (parameters, turn counters, per-turn records), one `Result`
// per worker and an optional buffer of samples per worker. Shared and Result are trivially
// destructible and may hold lock-free std::atomic members, never pointers.
//
//   parent: auto st = shared_state<S, R>::create(workers, samples_per_worker);
//           st.shared().x = ...; auto start = run_workers(st, {url}, expected);
//   worker: if (auto w = parse_worker_args(argc, argv)) { auto st = shared_state<S, R>::attach(
//           w->shm_fd); ... connect ...; st.signal_ready(); auto start = st.wait_start(); ... }
#pragma once

#include "common/bench.hpp"

#include <atomic>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace corolock::bench::mp {

struct control {
  std::atomic<std::uint32_t> ready{0}, failed{0}, abort{0};
  std::atomic<std::int64_t> start_ns{0}; ///< the common start (steady ns); 0 = not yet
  std::uint32_t workers = 0;
  std::uint64_t sample_capacity = 0; ///< doubles per worker
};

/// A MAP_SHARED mapping of a memfd (which survives exec).
class shared_memory {
public:
  shared_memory() = default;
  static shared_memory create(std::size_t bytes);
  static shared_memory attach(int fd);
  ~shared_memory();
  shared_memory(shared_memory&& o) noexcept { *this = std::move(o); }
  shared_memory& operator=(shared_memory&& o) noexcept;
  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_; }

private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
};

template <typename Shared, typename Result>
class shared_state {
  static_assert(std::is_trivially_destructible_v<Shared> && std::is_trivially_destructible_v<Result>);

public:
  static shared_state create(std::uint32_t workers, std::size_t samples_per_worker = 0) {
    shared_state s;
    s.mem_ = shared_memory::create(bytes_for(workers, samples_per_worker));
    auto* c = new (s.mem_.data()) control();
    c->workers = workers;
    c->sample_capacity = samples_per_worker;
    s.layout();
    new (s.shared_) Shared();
    for (std::uint32_t i = 0; i < workers; ++i) {
      new (s.results_ + i) Result();
      new (s.counts_ + i) std::atomic<std::uint64_t>(0);
    }
    return s;
  }
  static shared_state attach(int fd) {
    shared_state s;
    s.mem_ = shared_memory::attach(fd);
    const auto& c = *static_cast<control*>(s.mem_.data());
    if (s.mem_.size() < bytes_for(c.workers, c.sample_capacity))
      throw std::runtime_error("shared_state::attach: region too small");
    s.layout();
    return s;
  }

  int fd() const noexcept { return mem_.fd(); }
  control& ctl() const noexcept { return *static_cast<control*>(mem_.data()); }
  std::uint32_t workers() const noexcept { return ctl().workers; }
  Shared& shared() const noexcept { return *shared_; }
  Result& result(std::uint32_t worker) const noexcept { return results_[worker]; }

  /// Worker: appends a sample; false when the buffer is full.
  bool add_sample(std::uint32_t worker, double x) const noexcept {
    auto i = counts_[worker].load(std::memory_order_relaxed);
    if (i >= ctl().sample_capacity)
      return false;
    samples_[worker * ctl().sample_capacity + i] = x;
    counts_[worker].store(i + 1, std::memory_order_release);
    return true;
  }
  std::span<const double> samples_of(std::uint32_t worker) const noexcept {
    auto n = counts_[worker].load(std::memory_order_acquire);
    return {samples_ + worker * ctl().sample_capacity, static_cast<std::size_t>(n)};
  }
  bench::samples all_samples() const {
    bench::samples out;
    for (std::uint32_t i = 0; i < workers(); ++i) {
      auto s = samples_of(i);
      out.append(s.data(), s.size());
    }
    return out;
  }

  void signal_ready() const noexcept { ctl().ready.fetch_add(1); }
  void signal_failed() const noexcept { ctl().failed.fetch_add(1); }
  /// Worker: blocks until the parent publishes the start time (nullopt on abort or after 30 s).
  std::optional<steady::time_point> wait_start() const;

private:
  static std::size_t up(std::size_t n) { return (n + 63) / 64 * 64; }
  static std::size_t bytes_for(std::uint32_t workers, std::size_t samples) {
    return up(sizeof(control)) + up(sizeof(Shared)) + up(sizeof(Result) * workers) +
           up(sizeof(std::atomic<std::uint64_t>) * workers) + up(sizeof(double) * workers * samples);
  }
  void layout() {
    auto* base = static_cast<char*>(mem_.data());
    std::size_t off = up(sizeof(control));
    shared_ = reinterpret_cast<Shared*>(base + off);
    off += up(sizeof(Shared));
    results_ = reinterpret_cast<Result*>(base + off);
    off += up(sizeof(Result) * workers());
    counts_ = reinterpret_cast<std::atomic<std::uint64_t>*>(base + off);
    off += up(sizeof(std::atomic<std::uint64_t>) * workers());
    samples_ = reinterpret_cast<double*>(base + off);
  }

  shared_memory mem_;
  Shared* shared_ = nullptr;
  Result* results_ = nullptr;
  std::atomic<std::uint64_t>* counts_ = nullptr;
  double* samples_ = nullptr;
};

/// Polls `ctl` until the start time is published; nullopt on abort or timeout.
std::optional<steady::time_point> wait_start(const control& ctl);
template <typename S, typename R>
std::optional<steady::time_point> shared_state<S, R>::wait_start() const {
  return mp::wait_start(ctl());
}

/// argv of a worker: <exe> --worker <index> <count> <shm-fd> <args...>
struct worker_args {
  std::uint32_t index = 0, count = 0;
  int shm_fd = -1;
  std::vector<std::string> args;
};
std::optional<worker_args> parse_worker_args(int argc, char** argv);

/// Parent: forks and execs the workers (they die with the parent), waits until all are ready,
/// publishes a start 50 ms later and waits (sleeping 2 ms at a time, not to steal the CPU the
/// workers and Redis share) until all exit; kills them `expected` + 30 s after the start. Throws on
/// any failure. Returns the start.
steady::time_point run_workers(control& ctl, int shm_fd, const std::vector<std::string>& args,
                               steady::duration expected);
template <typename S, typename R>
steady::time_point run_workers(const shared_state<S, R>& st, const std::vector<std::string>& args,
                               steady::duration expected) {
  return run_workers(st.ctl(), st.fd(), args, expected);
}

} // namespace corolock::bench::mp
