#include "core/permits_admin.hpp"

#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>

namespace corolock::core {

namespace {

struct admin_op : std::enable_shared_from_this<admin_op> {
  asio::any_io_executor ex;
  diagnostics* diag = nullptr;
  asio::cancellation_slot slot;
  // Never move-assigned (see detail/completion.hpp).
  detail::stored_handler<handler<void(error_code, semaphore_status)>> h;

  void finish(error_code ec, semaphore_status st, std::string_view words) {
    if (!h)
      return; // cancelled first: the store's answer is dropped
    if (slot.is_connected())
      slot.clear();
    if (ec)
      detail::diagnostics_access::of(diag, ec, words);
    detail::complete_later(ex, h.take(), {}, ec, st);
  }
};

} // namespace

void backend::permits(const lock_spec&, std::optional<std::int64_t>,
                      handler<void(error_code, semaphore_status, std::string)> h) {
  // Never called by the core for a store without run_time_permits (core::handle refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         semaphore_status{}, std::string("this store keeps no semaphore count"));
}

void permits_admin(backend& store, asio::any_io_executor ex, const lock_spec& lock,
                   std::optional<std::int64_t> count, diagnostics* diag,
                   handler<void(error_code, semaphore_status)> h) {
  auto op = std::make_shared<admin_op>();
  op->ex = std::move(ex);
  op->diag = diag;
  op->slot = asio::get_associated_cancellation_slot(h);
  op->h.set(std::move(h));
  if (op->slot.is_connected())
    op->slot.assign([w = std::weak_ptr<admin_op>(op)](asio::cancellation_type t) {
      if ((t & asio::cancellation_type::terminal) == asio::cancellation_type::none)
        return;
      if (auto p = w.lock())
        p->finish(asio::error::operation_aborted, {}, {});
    });
  store.permits(lock, count, [op](error_code ec, semaphore_status st, std::string words) {
    op->finish(ec, st, words);
  });
}

} // namespace corolock::core
