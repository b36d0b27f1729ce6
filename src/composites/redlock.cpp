// corolock::redlock: a mutex over a quorum of Redis clients (redlock.hpp). Everything of an
// acquisition — waiting, wake-up by release messages, cancellation, leases, the guard — is the
// core's and the quorum's (composites/quorum); what is here is the options' mapping and checks.
#include <corolock/lock/redlock.hpp>

#include "composites/quorum/quorum_source.hpp"

#include <corolock/redis/client.hpp>

#include <boost/system/system_error.hpp>

#include <string_view>
#include <utility>

namespace corolock {

namespace {
constexpr const char* what = "corolock::redlock";

[[noreturn]] void refuse(const std::string& words) {
  throw boost::system::system_error(error::invalid_argument, std::string(what) + ": " + words);
}

/// The quorum's words for an option, with the names of redlock_options.
std::string renamed(std::string words) {
  const std::pair<std::string_view, std::string_view> names[] = {
      {"quorum_options::", "redlock_options::"}, {"per_member_timeout", "per_master_timeout"}};
  for (const auto& [from, to] : names)
    for (auto at = words.find(from); at != std::string::npos; at = words.find(from, at + to.size()))
      words.replace(at, from.size(), to);
  return words;
}

composites::quorum_options quorum_options_of(const redlock_options& o) {
  composites::quorum_options q;
  q.clock_drift_factor = o.clock_drift_factor;
  q.drift_floor = o.drift_floor;
  q.retry_delay = o.retry_delay;
  q.per_member_timeout = o.per_master_timeout;
  return q;
}
} // namespace

// ---- redlock_options ----------------------------------------------------------------------------

std::chrono::steady_clock::duration redlock_options::drift() const noexcept {
  return quorum_options_of(*this).drift(lock.lease);
}

std::chrono::milliseconds redlock_options::effective_per_master_timeout() const noexcept {
  return quorum_options_of(*this).member_timeout(lock.lease);
}

error_code redlock_options::validate() const {
  std::string words;
  return validate(words);
}

error_code redlock_options::validate(std::string& words) const {
  if (lock.validate()) {
    words = "the lock options are refused (as for a mutex: lease 10 ms..24 h), got a lease of " +
            std::to_string(lock.lease.count()) + " ms";
    return error::invalid_argument;
  }
  // The quorum's own checks (a NaN factor fails too), in this struct's names.
  std::string quorum_words;
  if (quorum_options_of(*this).validate(quorum_words)) {
    words = renamed(quorum_words);
    return error::invalid_argument;
  }
  if (effective_per_master_timeout() >= lock.lease)
    words = "redlock_options::per_master_timeout must be at least 0 (0: lease/10) and below the "
            "lease of " + std::to_string(lock.lease.count()) + " ms, got " +
            std::to_string(per_master_timeout.count()) + " ms";
  else if (drift() >= lock.lease)
    words = "the drift (lease * clock_drift_factor + drift_floor) must be below the lease of " +
            std::to_string(lock.lease.count()) + " ms";
  else
    return {};
  return error::invalid_argument;
}

// ---- the quorum under the mutex -------------------------------------------------------------------

namespace detail {

redlock_quorum::redlock_quorum(std::vector<std::reference_wrapper<redis::client>> masters,
                               const std::string& name, redlock_options options)
    : options_(std::move(options)) {
  if (masters.empty())
    refuse("needs at least one master (use an odd number, 3 or more, to survive the loss of a "
           "minority)");
  for (std::size_t i = 0; i < masters.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (&masters[i].get() == &masters[j].get())
        refuse("masters " + std::to_string(j + 1) + " and " + std::to_string(i + 1) + " of " +
               std::to_string(masters.size()) +
               " are the same client; each master needs a client of its own");
  if (lock_options::validate_name(name))
    refuse("a lock name is 1 to " + std::to_string(lock_options::max_name) + " bytes, got " +
           std::to_string(name.size()));
  std::string words;
  if (options_.validate(words))
    refuse(words);
  std::vector<std::reference_wrapper<lock_source>> members(masters.begin(), masters.end());
  try {
    quorum_ = std::make_unique<composites::quorum_source>(std::move(members),
                                                          quorum_options_of(options_));
  } catch (const boost::system::system_error& e) {
    refuse(e.what()); // e.g. clients on different executors
  }
}

redlock_quorum::~redlock_quorum() = default;
redlock_quorum::redlock_quorum(redlock_quorum&&) noexcept = default;
redlock_quorum& redlock_quorum::operator=(redlock_quorum&&) noexcept = default;

} // namespace detail

// ---- redlock ---------------------------------------------------------------------------------------

redlock::redlock(std::vector<std::reference_wrapper<redis::client>> masters, std::string name,
                 redlock_options options)
    : redlock_quorum(std::move(masters), name, std::move(options)),
      mutex(*quorum_, std::move(name), options_.lock) {}

redlock::~redlock() = default; // the mutex first (bases go in reverse), then its quorum

redlock::redlock(redlock&&) noexcept = default;

redlock& redlock::operator=(redlock&& other) noexcept {
  // The handle goes before the quorum it was made from.
  mutex::operator=(std::move(other));
  redlock_quorum::operator=(std::move(other));
  return *this;
}

const redlock_options& redlock::options() const noexcept { return options_; }
std::size_t redlock::masters() const noexcept { return quorum_->members(); }
std::size_t redlock::quorum() const noexcept { return quorum_->quorum(); }

std::vector<std::uint64_t> redlock::member_tokens(const guard& g) {
  return composites::quorum_source::member_tokens(g);
}

} // namespace corolock
