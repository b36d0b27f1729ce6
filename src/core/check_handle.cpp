// The handle's argument checks that hold for every store (core/handle.hpp): the name's length by
// the store's traits, the lease's bounds, and each option or kind the store's traits lack
// (contract 7 of core/backend.hpp), and options of another store (lock_options::store). The store's
// own rules (its own options' ranges, …) follow in backend::check; a name's or a prefix's bytes are
// never refused (a store encodes what it cannot hold), only their lengths.
#include "core/handle.hpp"
#include "detail/printable_name.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

namespace corolock::core {

namespace {
[[noreturn]] void refuse(const char* what, const std::string& reason) {
  throw boost::system::system_error(error::invalid_argument, std::string(what) + ": " + reason);
}
} // namespace

void check_handle(const backend_traits& traits, const lock_spec& spec, const char* what) {
  using namespace std::chrono;
  const std::string store(traits.store);
  if (spec.name.empty() || spec.name.size() > traits.max_name)
    refuse(what, "a lock name on " + store + " is 1 to " + std::to_string(traits.max_name) +
                     " bytes");
  const auto& o = spec.options;
  const std::string lock = "lock " + detail::printable_name(spec.name) + ": ";
  if (o.lease < milliseconds(10) || o.lease > hours(24))
    refuse(what, lock + "lease must be 10 ms..24 h");
  if (o.prefix.size() > lock_options::max_prefix) // any bytes: each store encodes what it cannot hold
    refuse(what, lock + "a prefix is at most " + std::to_string(lock_options::max_prefix) + " bytes");
  if (!o.watchdog && !traits.fixed_lease)
    refuse(what, lock + "the " + store +
                     " store cannot serve a fixed lease (watchdog = false): its leases are " +
                     (traits.leases == lease_model::session ? "the session's" : "renewed"));
  if (spec.kind == lock_kind::read_write && !traits.read_write)
    refuse(what, lock + "the " + store + " store has no read-write lock (shared_mutex)");
  if (spec.kind == lock_kind::semaphore && !traits.semaphore)
    refuse(what, lock + "the " + store + " store has no semaphore");
  if (!o.store.empty() && o.store.store() != traits.store)
    refuse(what, lock + "options of the " + std::string(o.store.store()) + " store (lock_options::store) "
                 "given to a lock of the " + store + " store");
  if (o.lock_delay < milliseconds(0) || o.lock_delay > hours(1))
    refuse(what, lock + "lock_delay must be 0..1 h");
  if (o.lock_delay > milliseconds(0) && spec.kind != lock_kind::mutex)
    refuse(what, lock + "lock_delay is served by a mutex only (a shared_mutex's or a semaphore's "
                        "holders are many: one mark cannot say how each ended)");
  if (o.lock_delay > milliseconds(0) && !traits.marks)
    refuse(what, lock + "the " + store + " store cannot serve lock_delay: it keeps no marks "
                        "(backend_traits::marks), where a holder says it has not yet unlocked");
  if (spec.capacity < 1)
    refuse(what, lock + "a lock has at least one permit");
}

} // namespace corolock::core
