#include "backends/redis/client/multiplexer.hpp"

#include "backends/redis/client/request_access.hpp"

#include <corolock/error.hpp>
#include <corolock/redis/script.hpp>

#include <algorithm>
#include <cctype>

namespace corolock::redis::detail {
using corolock::detail::recycling_allocator;

namespace {

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_pubsub_kind(std::string_view kind) {
  for (std::string_view k : {"message", "pmessage", "smessage", "subscribe", "psubscribe",
                             "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"})
    if (equals_nocase(kind, k))
      return true;
  return false;
}

} // namespace

void multiplexer::start_session(int protocol) {
  protocol_ = protocol;
  subscribed_resp2_ = false;
  loaded_.clear(); // a new connection may reach a server that has none of them (a restart)
}

void multiplexer::add(pending_ptr p, bool first) {
  if (first)
    queue_.push_front(std::move(p));
  else
    queue_.push_back(std::move(p));
}

std::size_t multiplexer::prepare_write(std::vector<asio::const_buffer>& out,
                                       steady::time_point now, std::size_t max_buffers) {
  std::size_t taken = 0;
  const auto seq = write_seq_ + 1;
  while (!queue_.empty() && out.size() < max_buffers) {
    if (queue_.front()->done) {
      queue_.pop_front(); // cancelled before it was written
      continue;
    }
    const bool scripted =
        !queue_.front()->req.script_calls().empty() || !queue_.front()->replayed.empty();
    if (scripted && taken > 0 && out.size() + 2 > max_buffers)
      break; // leave room for loads ahead of it: the next write takes it
    auto p = std::move(queue_.front());
    queue_.pop_front();
    p->written = true;
    p->write_seq = seq;
    p->sent_at = now;
    if (scripted) {
      plan_loads(*p, seq);
      if (!p->preload.empty()) {
        out.push_back(asio::buffer(p->preload));
        stats.commands += p->preloads_left;
      }
    }
    out.push_back(asio::buffer(p->req.payload()));
    stats.commands += p->req.commands();
    if (protocol_ == 2 && !p->req.pubsub_commands().empty())
      subscribed_resp2_ = true;
    in_flight_.push_back(std::move(p));
    ++taken;
  }
  if (taken > 0) {
    write_seq_ = seq;
    ++stats.writes;
  }
  return taken;
}

void multiplexer::plan_loads(pending& p, std::uint64_t seq) {
  auto plan = [&](const script* code) {
    auto [it, fresh] = loaded_.try_emplace(code);
    if (!fresh && it->second.sha1 == code->sha1())
      return; // loaded on this session (or ahead of an earlier call of this request)
    it->second = {code->sha1(), seq};
    resp::write_command(p.preload, "SCRIPT", "LOAD", code->source());
    ++p.preloads_left;
  };
  for (const auto& call : p.req.script_calls())
    plan(call.code);
  for (const auto* code : p.replayed)
    plan(code);
}

void multiplexer::forget_loads(std::uint64_t seq) {
  std::erase_if(loaded_, [seq](const auto& entry) { return entry.second.write_seq <= seq; });
}

bool multiplexer::is_pubsub_frame(const resp::value& v) const {
  if (v.type == resp::type::push)
    return true;
  // RESP2 has no push type: on a subscribed connection, messages and confirmations are arrays
  // whose first element names their kind.
  return subscribed_resp2_ && v.type == resp::type::array && !v.children.empty() &&
         v.children[0].is_string() && is_pubsub_kind(v.children[0].data);
}

const request::pubsub_command* multiplexer::confirmation_due(const pending& p) const {
  const auto& cmds = p.req.pubsub_commands();
  if (p.pubsub_next >= cmds.size())
    return nullptr;
  const auto& c = cmds[p.pubsub_next];
  std::size_t read = p.req.expected_replies() - p.replies_left;
  return read >= c.first_reply ? &c : nullptr;
}

void multiplexer::store(const pending_ptr& p, resp::value&& v) {
  answered_sent_at_ = std::max(answered_sent_at_, p->sent_at);
  if (!p->done)
    p->resp.push_back(std::move(v));
  --p->replies_left;
  if (const auto* c = confirmation_due(*p);
      c && p->req.expected_replies() - p->replies_left == c->first_reply + c->channels.size())
    ++p->pubsub_next; // that command is fully answered
  if (p->replies_left == 0) {
    auto finished = p; // `p` may refer to the deque's element
    in_flight_.pop_front();
    finish(finished);
  }
}

multiplexer::frame multiplexer::on_value(resp::value& v) {
  if (is_pubsub_frame(v)) {
    // A confirmation of the subscribe-family command the oldest request waits for is its reply;
    // anything else (a message, an unsolicited notice) goes to the subscriber.
    if (!in_flight_.empty() && v.children.size() >= 2 && v.children[0].is_string()) {
      const auto& p = in_flight_.front();
      if (const auto* c = confirmation_due(*p)) {
        std::size_t i = p->req.expected_replies() - p->replies_left - c->first_reply;
        if (equals_nocase(v.children[0].data, c->kind) && v.children[1].data == c->channels[i]) {
          ++stats.replies;
          store(p, std::move(v));
          return frame::reply;
        }
      }
    }
    ++stats.pushes;
    return frame::push;
  }
  ++stats.replies;
  if (in_flight_.empty())
    return frame::out_of_step;
  const auto& p = in_flight_.front();
  if (p->preloads_left > 0) {
    // A SCRIPT LOAD's reply, set aside. A refused load shows as the NOSCRIPT of the call after it.
    --p->preloads_left;
    return frame::reply;
  }
  if (const auto* c = confirmation_due(*p)) {
    // A subscribe-family command refused as a whole (NOPERM, a wrong state): one error reply
    // answers every channel of it.
    if (!v.is_error())
      return frame::out_of_step;
    std::size_t i = p->req.expected_replies() - p->replies_left - c->first_reply;
    for (; i + 1 < c->channels.size(); ++i) {
      answered_sent_at_ = std::max(answered_sent_at_, p->sent_at);
      if (!p->done)
        p->resp.push_back(v);
      --p->replies_left;
    }
  }
  store(p, std::move(v));
  return frame::reply;
}

namespace {
bool is_noscript(const resp::value& v) { return v.is_error() && v.error_code() == "NOSCRIPT"; }
} // namespace

void multiplexer::finish(const pending_ptr& p) {
  if (p->done)
    return;
  if (p->is_retry) {
    if (std::any_of(p->resp.begin(), p->resp.end(), is_noscript))
      forget_loads(p->write_seq); // flushed again: its NOSCRIPT is the original's reply
    return complete(p, {});
  }
  const auto& calls = p->req.script_calls();
  auto refused = std::find_if(calls.begin(), calls.end(), [&](const request::script_call& c) {
    return is_noscript(p->resp[c.reply_index]);
  });
  if (refused == calls.end())
    return complete(p, {});
  forget_loads(p->write_seq); // the server lost its scripts: load them again before their next use
  // Replay only when nothing behind the first refused call ran: every reply from it on is the
  // NOSCRIPT of a script call (one reply each). Else the replies stay (see the opening comment).
  const std::size_t tail_calls = static_cast<std::size_t>(calls.end() - refused);
  const bool nothing_ran_after = p->req.expected_replies() - refused->reply_index == tail_calls &&
                                 std::all_of(refused, calls.end(), [&](const auto& c) {
                                   return is_noscript(p->resp[c.reply_index]);
                                 });
  if (!nothing_ran_after)
    return complete(p, {});
  auto retry = std::allocate_shared<pending>(recycling_allocator<pending>{});
  retry->is_retry = true;
  for (auto it = refused; it != calls.end(); ++it) {
    request_access::append_raw(
        retry->req, std::string_view(p->req.payload()).substr(it->offset, it->length));
    retry->parent_slots.push_back(it->reply_index);
    retry->replayed.push_back(it->code);
  }
  retry->replies_left = retry->req.expected_replies();
  retry->parent = p;
  ++stats.script_loads;
  add(std::move(retry), false);
}

void multiplexer::complete(const pending_ptr& p, error_code ec) {
  if (p->done)
    return;
  p->done = true;
  if (p->parent) {
    // A NOSCRIPT retry: put its replies where the originals were, then finish the original.
    auto parent = std::move(p->parent);
    if (!parent->done) {
      if (ec) {
        complete(parent, ec);
      } else {
        for (std::size_t i = 0; i < p->parent_slots.size(); ++i)
          parent->resp[p->parent_slots[i]] = std::move(p->resp[i]);
        complete(parent, {});
      }
    }
    return;
  }
  completed_.emplace_back(p, ec);
}

void multiplexer::fail_in_flight(error_code ec) {
  auto in_flight = std::exchange(in_flight_, {});
  for (auto& p : in_flight)
    complete(p, ec);
}

void multiplexer::complete_in_flight(error_code ec) {
  for (auto& p : in_flight_)
    complete(p, ec);
}

void multiplexer::fail_queued(error_code ec, bool only_impatient) {
  std::deque<pending_ptr> keep;
  auto queue = std::exchange(queue_, {});
  for (auto& p : queue) {
    if (p->done)
      continue;
    // A queued NOSCRIPT retry belongs to a written request whose outcome is now unknown.
    if (!only_impatient || p->req.opts().cancel_if_not_connected || p->is_retry)
      complete(p, p->is_retry ? error_code(error::connection_lost) : ec);
    else
      keep.push_back(std::move(p));
  }
  queue_ = std::move(keep);
}

} // namespace corolock::redis::detail
