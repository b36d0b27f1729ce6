#include "backends/redis/client/handshake.hpp"

#include <string_view>
#include <utility>

namespace corolock::redis::detail {

namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

/// "HELLO: WRONGPASS invalid username-password pair or user is disabled."
std::string refusal_text(std::string_view command, const resp::value& reply) {
  return std::string(command) + ": " + reply.data;
}

} // namespace

error_code handshake::classify_refusal(const resp::value& reply) {
  auto code = reply.error_code();
  if (code == "WRONGPASS" || code == "NOAUTH" || code == "NOPERM" ||
      contains(reply.data, "invalid password") || contains(reply.data, "invalid username-password"))
    return error::auth_failed;
  return error::connect_failed;
}

bool handshake::hello_unknown(const resp::value& reply) {
  auto code = reply.error_code();
  return code == "NOPROTO" || (code == "ERR" && contains(reply.data, "unknown command"));
}

handshake::step handshake::start() {
  protocol_ = 2;
  if (cfg_.protocol != 3)
    return setup_or_next();
  std::vector<std::string> args{"3"};
  if (!cfg_.password.empty())
    args.insert(args.end(),
                {"AUTH", cfg_.username.empty() ? "default" : cfg_.username, cfg_.password});
  if (!cfg_.client_name.empty())
    args.insert(args.end(), {"SETNAME", cfg_.client_name});
  request hello;
  hello.push_range("HELLO", args);
  return send(std::move(hello), stage::hello);
}

handshake::step handshake::on_replies(const response& replies) {
  const std::size_t expected = stage_ == stage::setup ? setup_commands_.size() : 1;
  if (stage_ == stage::start || stage_ == stage::finished)
    return finish(error::invalid_argument, "no handshake request is waiting for replies");
  if (replies.size() != expected)
    return finish(error::protocol_error, "expected " + std::to_string(expected) +
                                             " handshake replies, got " +
                                             std::to_string(replies.size()));
  switch (stage_) {
  case stage::hello: {
    const auto& r = replies[0];
    if (!r.is_error()) {
      protocol_ = 3;
      return setup_or_next();
    }
    if (!hello_unknown(r))
      return finish(classify_refusal(r), refusal_text("HELLO", r));
    return setup_or_next(); // RESP2 from here on
  }
  case stage::setup:
    for (std::size_t i = 0; i < replies.size(); ++i)
      if (replies[i].is_error())
        return finish(classify_refusal(replies[i]), refusal_text(setup_commands_[i], replies[i]));
    return role_or_done();
  case stage::role: {
    const auto& r = replies[0];
    if (r.is_aggregate() && !r.children.empty() && r.children[0].data == "master")
      return finish();
    return finish(error::not_master, "ROLE answered " + resp::to_debug_string(r));
  }
  case stage::start:
  case stage::finished:
    break;
  }
  return finish(error::invalid_argument, "no handshake request is waiting for replies");
}

handshake::step handshake::setup_or_next() {
  request setup;
  setup_commands_.clear();
  if (protocol_ == 2) {
    if (!cfg_.password.empty()) {
      if (cfg_.username.empty())
        setup.push("AUTH", cfg_.password);
      else
        setup.push("AUTH", cfg_.username, cfg_.password);
      setup_commands_.emplace_back("AUTH");
    }
    if (!cfg_.client_name.empty()) {
      setup.push("CLIENT", "SETNAME", cfg_.client_name);
      setup_commands_.emplace_back("CLIENT SETNAME");
    }
  }
  if (cfg_.database != 0) {
    setup.push("SELECT", cfg_.database);
    setup_commands_.emplace_back("SELECT");
  }
  if (setup.empty())
    return role_or_done();
  return send(std::move(setup), stage::setup);
}

handshake::step handshake::role_or_done() {
  if (!master_only_)
    return finish();
  request role;
  role.push("ROLE");
  return send(std::move(role), stage::role);
}

handshake::step handshake::finish(error_code ec, std::string why) {
  stage_ = stage::finished;
  step s;
  s.what = ec ? step::action::fail : step::action::done;
  s.ec = ec;
  s.why = std::move(why);
  return s;
}

handshake::step handshake::send(request req, stage next) {
  stage_ = next;
  step s;
  s.what = step::action::send;
  s.req = std::move(req);
  return s;
}

} // namespace corolock::redis::detail
