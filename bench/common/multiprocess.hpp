// Multi-process benchmarks: the bench binary re-executes itself (/proc/self/exe --worker ...) as N
// worker processes that share one memory region with the parent.
//
// The region (a memfd, inherited across exec) holds
//   - a `control` block: ready/finished/failed counters, the start time, a reusable barrier;
//   - one `Shared` object (parameters from the parent, turn counters, ...);
//   - one `Result` per worker;
//   - optionally a sample buffer per worker (doubles, e.g. latencies in µs), so the parent can
//     compute exact percentiles over all workers.
// Shared and Result must be trivially destructible and default-constructible; they may hold
// std::atomic members (lock-free atomics work across processes), never pointers or std::string.
//
// Parent:
//   auto st = mp::shared_state<params, result>::create(workers, samples_per_worker);
//   st.shared().hold_us = 100;
//   mp::process_group group;
//   auto r = mp::launch(st, group, {.args = {"--scenario", "hot_key", url}});
//   if (!r.ok) ... r.error ...
//   for (i ...) st.result(i) ..., st.samples(i) ...
// Worker (in main, before anything else):
//   if (auto w = mp::parse_worker_args(argc, argv)) {
//     auto st = mp::shared_state<params, result>::attach(w->shm_fd);
//     ... connect ...; st.signal_ready();
//     auto start = st.wait_start(10s); if (!start) return 1;
//     ... run from *start (all workers share steady_clock) ...; st.result(w->index) = ...;
//     return 0;   // exit status 0 = success
//   }
#pragma once

#include "common/stats.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/types.h>

namespace corolock::bench::mp {

using namespace std::chrono_literals;

/// Coordination block at the start of the region.
struct control {
  std::atomic<std::uint32_t> ready{0};    ///< workers that called signal_ready()
  std::atomic<std::uint32_t> finished{0}; ///< workers that called signal_finished()
  std::atomic<std::uint32_t> failed{0};   ///< workers that called signal_failed()
  std::atomic<std::uint32_t> abort{0};    ///< set by the parent: workers should stop
  std::atomic<std::int64_t> start_ns{0};  ///< steady_clock ns when the workers start; 0 = not yet
  std::atomic<std::uint32_t> barrier_arrived{0};
  std::atomic<std::uint32_t> barrier_generation{0};
  std::uint32_t workers = 0;
  std::uint64_t sample_capacity = 0; ///< doubles per worker
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

/// A memfd mapping (MAP_SHARED), unmapped and closed on destruction. Its fd survives exec.
class shared_memory {
public:
  shared_memory() = default;
  static shared_memory create(std::size_t bytes);
  static shared_memory attach(int fd);
  ~shared_memory();
  shared_memory(shared_memory&& o) noexcept;
  shared_memory& operator=(shared_memory&& o) noexcept;
  shared_memory(const shared_memory&) = delete;
  shared_memory& operator=(const shared_memory&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_; }

private:
  void reset() noexcept;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
};

namespace detail {
constexpr std::size_t align_up(std::size_t n, std::size_t a = 64) { return (n + a - 1) / a * a; }
void sleep_briefly(std::uint64_t iteration); // spin a little, then yield, then sleep 100 µs
/// Blocks (polling) until pred() or the deadline; true if pred() held.
template <typename Pred>
bool poll_until(Pred pred, steady::time_point deadline) {
  for (std::uint64_t i = 0;; ++i) {
    if (pred())
      return true;
    if (steady::now() >= deadline)
      return false;
    sleep_briefly(i);
  }
}
} // namespace detail

template <typename Shared, typename Result>
class shared_state {
  static_assert(std::is_trivially_destructible_v<Shared> && std::is_default_constructible_v<Shared>);
  static_assert(std::is_trivially_destructible_v<Result> && std::is_default_constructible_v<Result>);

public:
  /// Parent: a fresh region for `workers` workers, every object default-constructed.
  static shared_state create(std::uint32_t workers, std::size_t samples_per_worker = 0) {
    shared_state s;
    s.mem_ = shared_memory::create(bytes_for(workers, samples_per_worker));
    s.layout(workers, samples_per_worker);
    auto* c = new (s.mem_.data()) control();
    c->workers = workers;
    c->sample_capacity = samples_per_worker;
    new (s.shared_) Shared();
    for (std::uint32_t i = 0; i < workers; ++i) {
      new (s.results_ + i) Result();
      new (s.sample_counts_ + i) std::atomic<std::uint64_t>(0);
    }
    return s;
  }
  /// Worker: maps the region the parent created (objects already constructed).
  static shared_state attach(int fd) {
    shared_state s;
    s.mem_ = shared_memory::attach(fd);
    auto* c = static_cast<control*>(s.mem_.data());
    if (s.mem_.size() < bytes_for(c->workers, c->sample_capacity))
      throw std::runtime_error("shared_state::attach: region too small (different layout?)");
    s.layout(c->workers, c->sample_capacity);
    return s;
  }

  int fd() const noexcept { return mem_.fd(); }
  control& ctl() const noexcept { return *static_cast<control*>(mem_.data()); }
  std::uint32_t workers() const noexcept { return ctl().workers; }
  Shared& shared() const noexcept { return *shared_; }
  Result& result(std::uint32_t worker) const noexcept { return results_[worker]; }

  /// Worker: appends one sample; false (and dropped) when the buffer is full.
  bool add_sample(std::uint32_t worker, double x) const noexcept {
    auto& n = sample_counts_[worker];
    auto i = n.load(std::memory_order_relaxed);
    if (i >= ctl().sample_capacity)
      return false;
    samples_[worker * ctl().sample_capacity + i] = x;
    n.store(i + 1, std::memory_order_release);
    return true;
  }
  std::span<const double> samples(std::uint32_t worker) const noexcept {
    auto n = sample_counts_[worker].load(std::memory_order_acquire);
    return {samples_ + worker * ctl().sample_capacity, static_cast<std::size_t>(n)};
  }
  /// Every worker's samples together.
  bench::samples all_samples() const {
    bench::samples out;
    for (std::uint32_t i = 0; i < workers(); ++i) {
      auto s = samples(i);
      out.append(s.data(), s.size());
    }
    return out;
  }
  void clear_samples() const noexcept {
    for (std::uint32_t i = 0; i < workers(); ++i)
      sample_counts_[i].store(0, std::memory_order_relaxed);
  }

  // --- worker side -------------------------------------------------------------------------
  void signal_ready() const noexcept { ctl().ready.fetch_add(1, std::memory_order_acq_rel); }
  void signal_finished() const noexcept { ctl().finished.fetch_add(1, std::memory_order_acq_rel); }
  void signal_failed() const noexcept { ctl().failed.fetch_add(1, std::memory_order_acq_rel); }
  bool aborted() const noexcept { return ctl().abort.load(std::memory_order_acquire) != 0; }
  /// Waits for the parent's start time and returns it (it may still be in the future: sleep or
  /// arm a timer until then). nullopt on abort or timeout.
  std::optional<steady::time_point> wait_start(std::chrono::milliseconds timeout = 30s) const {
    auto& c = ctl();
    bool ok = detail::poll_until(
        [&] {
          return c.start_ns.load(std::memory_order_acquire) != 0 ||
                 c.abort.load(std::memory_order_acquire) != 0;
        },
        steady::now() + timeout);
    if (!ok || aborted())
      return std::nullopt;
    return from_ns(c.start_ns.load(std::memory_order_acquire));
  }
  /// A reusable barrier among `parties` processes (workers, plus the parent if it takes part).
  /// False on timeout or abort (the barrier is then broken for this run).
  bool arrive_and_wait(std::uint32_t parties, std::chrono::milliseconds timeout = 30s) const {
    auto& c = ctl();
    auto gen = c.barrier_generation.load(std::memory_order_acquire);
    if (c.barrier_arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == parties) {
      c.barrier_arrived.store(0, std::memory_order_relaxed);
      c.barrier_generation.fetch_add(1, std::memory_order_acq_rel);
      return true;
    }
    return detail::poll_until(
               [&] { return c.barrier_generation.load(std::memory_order_acquire) != gen; },
               steady::now() + timeout) &&
           !aborted();
  }

  // --- parent side -------------------------------------------------------------------------
  void set_start(steady::time_point t) const noexcept {
    ctl().start_ns.store(to_ns(t), std::memory_order_release);
  }
  void abort() const noexcept { ctl().abort.store(1, std::memory_order_release); }

private:
  static std::size_t bytes_for(std::uint32_t workers, std::size_t samples) {
    using detail::align_up;
    return align_up(sizeof(control)) + align_up(sizeof(Shared)) +
           align_up(sizeof(Result) * workers) +
           align_up(sizeof(std::atomic<std::uint64_t>) * workers) +
           align_up(sizeof(double) * workers * samples) + 64;
  }
  void layout(std::uint32_t workers, std::size_t samples) {
    using detail::align_up;
    auto* base = static_cast<char*>(mem_.data());
    std::size_t off = align_up(sizeof(control));
    shared_ = reinterpret_cast<Shared*>(base + off);
    off += align_up(sizeof(Shared));
    results_ = reinterpret_cast<Result*>(base + off);
    off += align_up(sizeof(Result) * workers);
    sample_counts_ = reinterpret_cast<std::atomic<std::uint64_t>*>(base + off);
    off += align_up(sizeof(std::atomic<std::uint64_t>) * workers);
    samples_ = reinterpret_cast<double*>(base + off);
    (void)samples;
  }

  shared_memory mem_;
  Shared* shared_ = nullptr;
  Result* results_ = nullptr;
  std::atomic<std::uint64_t>* sample_counts_ = nullptr;
  double* samples_ = nullptr;
};

/// What a worker process was started with.
struct worker_args {
  std::uint32_t index = 0; ///< 0 .. count-1
  std::uint32_t count = 0;
  int shm_fd = -1;
  std::vector<std::string> args; ///< the extra arguments the parent passed
};
/// argv of a worker is: <exe> --worker <index> <count> <shm-fd> <args...>. nullopt if not a worker.
std::optional<worker_args> parse_worker_args(int argc, char** argv);

/// The worker processes of one launch. Only processes it started are ever signalled (by pid);
/// the destructor kills (SIGKILL) and reaps any still running.
class process_group {
public:
  process_group() = default;
  ~process_group();
  process_group(const process_group&) = delete;
  process_group& operator=(const process_group&) = delete;

  /// fork + exec of /proc/self/exe as `count` workers sharing the memfd `shm_fd`. Children die
  /// with the parent (PR_SET_PDEATHSIG) and inherit only stdin/stdout/stderr and the memfd.
  void spawn(std::uint32_t count, int shm_fd, const std::vector<std::string>& args);
  /// Reaps the workers that have exited (non-blocking); the number that exited non-zero so far.
  std::size_t poll();
  std::size_t running() const noexcept;
  std::size_t failures() const noexcept { return failures_; }
  /// Waits up to `timeout` for all to exit, then SIGKILLs the rest. True if all exited with 0.
  bool wait_all(std::chrono::milliseconds timeout);
  void kill_all() noexcept;

private:
  std::vector<pid_t> pids_; // -1 once reaped
  std::size_t failures_ = 0;
};

struct launch_options {
  std::vector<std::string> args;                      ///< extra worker arguments
  std::chrono::milliseconds ready_timeout = 20s;      ///< all workers connected and ready
  std::chrono::milliseconds start_delay = 50ms;       ///< start time = all ready + this
  std::chrono::milliseconds finish_timeout = 120s;    ///< all workers exited
};
struct launch_result {
  bool ok = false;
  std::string error;
  steady::time_point start;
};

/// Parent: spawns the workers of `state`, waits until all are ready, publishes a common start time,
/// and waits for all of them to exit. On failure, aborts and kills the workers.
launch_result launch_impl(control& ctl, int shm_fd, process_group& group,
                          const launch_options& opts);
template <typename Shared, typename Result>
launch_result launch(const shared_state<Shared, Result>& state, process_group& group,
                     const launch_options& opts) {
  return launch_impl(state.ctl(), state.fd(), group, opts);
}

} // namespace corolock::bench::mp
