// One rate_limiter acquisition (rate_take.hpp): the machine, the default of a store without a
// bucket, and the refusal's words.
#include "core/rate_take.hpp"

#include "core/abortable.hpp"
#include "core/engine.hpp"
#include "detail/completion.hpp"
#include "detail/printable_name.hpp"

#include <corolock/error.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corolock::core {

void backend::take_tokens(const lock_spec&, bucket_take,
                          handler<void(error_code, bucket_answer, std::string)> h) {
  // Never called by the core for a store without a bucket (check_token_bucket refuses first).
  detail::complete_later(get_executor(), std::move(h), {}, error_code(error::invalid_argument),
                         bucket_answer{},
                         "the " + std::string(traits().store) + " store keeps no token bucket");
}

void check_token_bucket(const backend_traits& traits, const lock_spec& lock, const char* what) {
  if (traits.token_bucket)
    return;
  throw boost::system::system_error(
      error::invalid_argument,
      std::string(what) + ": " + detail::printable_name(lock.name) + ": the " +
          std::string(traits.store) +
          " store keeps no token bucket counted on its own clock (backend_traits::token_bucket): "
          "a rate limit needs one atomic take against one clock, which it cannot give");
}

namespace {

constexpr std::chrono::milliseconds first_retry{50};
constexpr std::chrono::milliseconds last_retry{2000};
constexpr std::chrono::microseconds longest_wait{std::int64_t{1} << 50};

bool unanswered(error_code ec) {
  return ec == error::not_connected || ec == error::timeout || ec == error::connection_lost;
}

std::string tokens_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

/// One acquisition: `Values` is the caller's (bool for a try, none for an acquisition).
template <typename... Values>
class bucket_run : public std::enable_shared_from_this<bucket_run<Values...>> {
public:
  using op_type = abortable<Values...>;

  bucket_run(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
             bucket_take what, steady::time_point deadline, bool try_only)
      : eng_(e), spec_(std::move(spec)), what_(what), deadline_(deadline), try_only_(try_only) {}

  void start(asio::any_io_executor ex, diagnostics* diag, typename op_type::caller_handler h) {
    op_ = op_type::make(std::move(ex), diag, std::move(h), asio::cancellation_type::all,
                        [w = this->weak_from_this()] {
                          if (auto self = w.lock())
                            self->stop();
                        });
    auto e = eng_.lock();
    if (!e || e->closed())
      return finish(error::closed, "the client is closed", false);
    e->add_closer(this, [self = this->shared_from_this()] {
      self->finish(error::closed, "the client closed while the rate limiter waited", false);
    });
    take();
  }

private:
  void take() {
    auto e = eng_.lock();
    if (op_->done())
      return stop();
    if (!e || e->closed())
      return finish(error::closed, "the client is closed", false);
    if (try_only_ && e->store().known_unreachable()) // a try waits for no connection
      return finish(error::not_connected,
                    "the " + std::string(e->store().traits().store) + " store cannot be reached now",
                    false);
    if (unanswered_before_ && deadline_ <= e->store().now()) // the back-off reached the deadline
      return finish(error::timeout,
                    "the store did not answer the rate limiter's take before the deadline: " +
                        unanswered_words_,
                    false);
    // How long this caller would wait for tokens not yet there: the store reserves them within it.
    what_.max_wait = std::chrono::microseconds(0);
    if (!try_only_) {
      const auto now = e->store().now();
      what_.max_wait = deadline_ == steady::time_point::max() ? longest_wait
                       : deadline_ <= now ? std::chrono::microseconds(0)
                       : std::min(longest_wait, std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - now));
    }
    // While the take is out, its deadline still ends the acquisition — at the deadline, with
    // timeout — however long the store takes to answer; the answer then finds it done.
    taking_ = true;
    sent_at_ = e->store().now();
    if (!try_only_ && deadline_ != steady::time_point::max() && deadline_ > sent_at_)
      arm(deadline_);
    e->store().take_tokens(*spec_, what_,
                           [self = this->shared_from_this()](error_code ec, bucket_answer a,
                                                             std::string words) {
                             self->on_answer(ec, a, std::move(words));
                           });
  }

  void on_answer(error_code ec, bucket_answer a, std::string words) {
    auto e = eng_.lock();
    taking_ = false;
    if (op_->done())
      return stop();
    if (!e || e->closed())
      return finish(error::closed, "the client is closed", false);
    if (!ec) {
      if (a.taken && a.wait <= std::chrono::microseconds(0))
        return finish({}, {}, true);
      if (a.taken) { // reserved: due after the wait, with no further request
        const auto now = e->store().now();
        const auto due = now + std::min(a.wait, longest_wait);
        // The store counted max_wait from when it read the take: one that spent a while on its
        // way can come back with tokens due after the deadline. They are given up (lost: that
        // admits less, never more) — the acquisition never completes after its deadline.
        if (due > deadline_)
          return finish(error::timeout,
                        "the bucket " + detail::printable_name(spec_->name) + " reserved the tokens due " +
                            std::to_string(ms_ceil(due - deadline_)) +
                            " ms after the deadline (the take was " + std::to_string(ms_ceil(now - sent_at_)) +
                            " ms on its way and back); they are given up",
                        false);
        reserved_ = true;
        return sleep_until(due);
      }
      if (try_only_)
        return finish({}, {}, false);
      // A store's wait, kept within 1 µs .. 2^50 µs (35 years): at that, the sum cannot overflow
      // the clock, whatever a store answered for a tiny rate.
      const auto wait = std::clamp(a.wait, std::chrono::microseconds(1), longest_wait);
      const auto at = e->store().now() + wait;
      if (at > deadline_)
        return finish(error::timeout,
                      "the bucket " + detail::printable_name(spec_->name) + " has " +
                          tokens_text(a.left) + " of the " + std::to_string(what_.count) +
                          " tokens asked; the rest comes in " +
                          std::to_string((wait.count() + 999) / 1000) + " ms, after the deadline",
                      false);
      return sleep_until(at);
    }
    if (try_only_ || !unanswered(ec))
      return finish(ec, words, false);
    // Unanswered: take again after the back-off while the deadline allows (a store back before it
    // still serves the caller); at the deadline it times out with these words (take()).
    unanswered_before_ = true;
    unanswered_words_ = std::move(words);
    const auto at = std::min(e->store().now() + retry_, deadline_);
    retry_ = std::min(retry_ * 2, last_retry);
    sleep_until(at);
  }

  void sleep_until(steady::time_point at) { arm(at); }

  /// The one timer: while a take is out, the deadline; then the reserved tokens' due time, or
  /// the next take's.
  void arm(steady::time_point at) {
    auto e = eng_.lock();
    if (!timer_)
      timer_ = e->store().make_timer();
    timer_->arm(at, [w = this->weak_from_this()] {
      auto self = w.lock();
      if (!self)
        return;
      if (self->taking_) // the deadline, with the take unanswered
        return self->finish(error::timeout,
                            "the store did not answer the rate limiter's take of " +
                                detail::printable_name(self->spec_->name) + " before the deadline",
                            false);
      if (self->reserved_) // the reserved tokens are due now
        return self->finish({}, {}, true);
      self->take();
    });
  }

  static std::int64_t ms_ceil(steady::duration d) {
    return std::chrono::ceil<std::chrono::milliseconds>(d).count();
  }

  void finish(error_code ec, std::string_view words, bool taken) {
    if constexpr (sizeof...(Values) == 0) {
      static_cast<void>(taken);
      op_->finish(ec, words);
    } else {
      op_->finish(ec, words, taken);
    }
    stop();
  }

  /// Nothing of the acquisition waits any more: its timer disarmed, its closer dropped.
  void stop() {
    if (timer_)
      timer_->disarm();
    if (auto e = eng_.lock())
      e->drop_closer(this);
  }

  std::weak_ptr<engine> eng_;
  std::shared_ptr<const lock_spec> spec_;
  bucket_take what_;
  steady::time_point deadline_;
  bool try_only_;
  std::chrono::milliseconds retry_ = first_retry;
  bool reserved_ = false; // the store reserved the tokens: the sleep ends in success
  bool taking_ = false;   // a take is out: the timer, if armed, is the deadline
  steady::time_point sent_at_{};
  bool unanswered_before_ = false; // a take went unanswered: the deadline ends the back-off
  std::string unanswered_words_;   // and its words
  std::shared_ptr<op_type> op_;
  std::unique_ptr<timer> timer_;
};

} // namespace

void take_from_bucket(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
                      bucket_take what, steady::time_point deadline, bool try_only,
                      asio::any_io_executor ex, diagnostics* diag,
                      handler<void(error_code, bool)> h) {
  auto run = std::make_shared<bucket_run<bool>>(e, std::move(spec), what, deadline, try_only);
  run->start(std::move(ex), diag, std::move(h));
}

void take_from_bucket(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
                      bucket_take what, steady::time_point deadline, asio::any_io_executor ex,
                      diagnostics* diag, handler<void(error_code)> h) {
  auto run = std::make_shared<bucket_run<>>(e, std::move(spec), what, deadline, false);
  run->start(std::move(ex), diag, std::move(h));
}

} // namespace corolock::core
