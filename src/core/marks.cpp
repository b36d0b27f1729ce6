// A lock's marks through the seam (marks.hpp): the default of a store without them, the call with
// its cancellation, and the refusal's words.
#include "core/marks.hpp"

#include "core/abortable.hpp"
#include "detail/completion.hpp"
#include "detail/printable_name.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

namespace corolock::core {

void backend::marks(const lock_spec&, marks_call, std::uint32_t,
                    handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  // Never called by the core for a store without marks (check_marks refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         std::vector<std::uint32_t>{},
                         std::string("the ") + std::string(traits().store) + " store keeps no marks");
}

void marks_admin(backend& store, asio::any_io_executor ex, const lock_spec& lock, marks_call what,
                 std::uint32_t index, diagnostics* diag,
                 handler<void(error_code, std::vector<std::uint32_t>)> h) {
  auto op = abortable<std::vector<std::uint32_t>>::make(std::move(ex), diag, std::move(h),
                                                        asio::cancellation_type::terminal);
  store.marks(lock, what, index,
              [op](error_code ec, std::vector<std::uint32_t> set, std::string words) {
                op->finish(ec, words, std::move(set));
              });
}

void check_marks(const backend_traits& traits, const lock_spec& lock, const char* what) {
  if (traits.marks)
    return;
  throw boost::system::system_error(
      error::invalid_argument,
      std::string(what) + ": lock " + detail::printable_name(lock.name) + ": the " +
          std::string(traits.store) +
          " store keeps no shared marks (backend_traits::marks), where a segmented lock keeps "
          "its empty segments");
}

} // namespace corolock::core
