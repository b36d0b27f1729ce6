#include "common/cli.hpp"

#include <charconv>
#include <stdexcept>
#include <string_view>

namespace corolock::bench {

cli::cli(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    args_.push_back({argv[i], false});
}

cli::cli(std::vector<std::string> args) {
  for (auto& a : args)
    args_.push_back({std::move(a), false});
}

bool cli::flag(const std::string& name) {
  bool found = false;
  for (auto& a : args_)
    if (a.text == name) {
      a.used = true;
      found = true;
    }
  return found;
}

std::vector<std::string> cli::values(const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    auto& a = args_[i];
    if (a.text == name) {
      if (i + 1 >= args_.size())
        throw std::invalid_argument(name + " needs a value");
      a.used = true;
      args_[i + 1].used = true;
      out.push_back(args_[i + 1].text);
      ++i;
    } else if (a.text.size() > name.size() && a.text.compare(0, name.size(), name) == 0 &&
               a.text[name.size()] == '=') {
      a.used = true;
      out.push_back(a.text.substr(name.size() + 1));
    }
  }
  return out;
}

std::optional<std::string> cli::value(const std::string& name) {
  auto v = values(name);
  if (v.empty())
    return std::nullopt;
  return v.back();
}

std::string cli::string(const std::string& name, std::string fallback) {
  auto v = value(name);
  return v ? *v : std::move(fallback);
}

namespace {
template <typename T>
T to_number(const std::string& name, std::string_view s) {
  T out{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size())
    throw std::invalid_argument(name + ": not a number: " + std::string(s));
  return out;
}
} // namespace

std::vector<std::string> cli::rest() {
  std::vector<std::string> out;
  for (auto& a : args_)
    if (!a.used && a.text.rfind("--", 0) != 0) {
      a.used = true;
      out.push_back(a.text);
    }
  return out;
}

long long cli::integer(const std::string& name, long long fallback) {
  auto v = value(name);
  return v ? to_number<long long>(name, *v) : fallback;
}

double cli::number(const std::string& name, double fallback) {
  auto v = value(name);
  return v ? to_number<double>(name, *v) : fallback;
}

std::vector<long long> cli::integers(const std::string& name, std::vector<long long> fallback) {
  auto v = value(name);
  if (!v)
    return fallback;
  std::vector<long long> out;
  std::string_view s = *v;
  while (!s.empty()) {
    auto comma = s.find(',');
    out.push_back(to_number<long long>(name, s.substr(0, comma)));
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  return out;
}

std::optional<std::string> cli::first_positional() {
  if (args_.empty() || args_[0].text.rfind("--", 0) == 0)
    return std::nullopt;
  args_[0].used = true;
  return args_[0].text;
}

void cli::finish() const {
  std::string unknown;
  for (const auto& a : args_)
    if (!a.used)
      unknown += (unknown.empty() ? "" : " ") + a.text;
  if (!unknown.empty())
    throw std::invalid_argument("unknown arguments: " + unknown);
}

common_options common_options::parse(cli& args) {
  common_options o;
  o.quick = args.flag("--quick");
  o.repetitions = static_cast<int>(args.integer("--repetitions", o.quick ? 3 : 5));
  if (o.repetitions < 1)
    throw std::invalid_argument("--repetitions must be at least 1");
  o.out = args.string("--out", "");
  o.baselines = args.string("--baselines", "");
  if (auto s = args.value("--scenarios")) {
    std::string_view v = *s;
    while (!v.empty()) {
      auto comma = v.find(',');
      o.only.emplace(v.substr(0, comma));
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    }
  }
  if (auto url = args.first_positional())
    o.url = *url;
  return o;
}

} // namespace corolock::bench
