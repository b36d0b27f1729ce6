#include "backends/testing/store_access.hpp"

#include <boost/asio/post.hpp>

namespace corolock::testing {

store::store(asio::any_io_executor ex, store_options o)
    : state_(std::make_shared<detail::state>(std::move(ex), o)) {}

store::~store() = default;

const store_options& store::options() const noexcept { return state_->options; }

store::clock::time_point store::now() const { return state_->now(); }

void store::advance(std::chrono::milliseconds d) { state_->advance(d); }

void store::run_for(asio::io_context& io, std::chrono::milliseconds d) {
  auto settle = [&] {
    io.restart();
    io.poll();
  };
  if (state_->options.clock != clock_mode::manual) {
    io.restart();
    io.run_for(d);
    return;
  }
  auto target = state_->now() + d;
  settle();
  while (state_->run_one_due(target))
    settle();
  state_->advance(target - state_->now() > clock::duration::zero()
                      ? std::chrono::duration_cast<std::chrono::milliseconds>(target - state_->now())
                      : std::chrono::milliseconds(0));
  settle();
}

std::vector<holder_info> store::holders(const std::string& name, const std::string& prefix) const {
  return state_->list(prefix, name, true);
}
std::vector<holder_info> store::queue(const std::string& name, const std::string& prefix) const {
  return state_->list(prefix, name, false);
}
std::uint64_t store::token(const std::string& name, const std::string& prefix) const {
  return state_->token(prefix, name);
}
bool store::empty() const { return state_->empty(); }

std::uint64_t store::requests() const { return state_->requests; }

void store::set_down(bool down) {
  state_->down = down;
  state_->links_changed();
}
bool store::down() const noexcept { return state_->down; }

void store::refuse_bids(int n, error_code ec, std::string words) {
  state_->refusals = n;
  state_->refusal_ec = ec;
  state_->refusal_words = std::move(words);
}

void store::delay_grants(int n, std::chrono::milliseconds d) {
  state_->delayed_grants = n;
  state_->grant_delay = d;
}

} // namespace corolock::testing
