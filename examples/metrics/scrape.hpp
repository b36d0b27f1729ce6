// scrape.hpp: what Prometheus does with /metrics, as far as the example's check needs it: fetch the
// page (Boost.Beast's HTTP client) and read its samples, every line that is no comment being
// `name{labels} value` or `name value` (the text format 0.0.4, without timestamps).
#pragma once

#include "serve.hpp"

#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

/// GET `target` from `at`: the body of a 200 answer; throws otherwise.
inline asio::awaitable<std::string> http_get(tcp::endpoint at, std::string target) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  stream.expires_after(std::chrono::seconds(10));
  co_await stream.async_connect(at, asio::use_awaitable);
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, at.address().to_string());
  co_await http::async_write(stream, req, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  co_await http::async_read(stream, buffer, res, asio::use_awaitable);
  if (res.result() != http::status::ok)
    throw std::runtime_error("GET " + target + ": HTTP " + std::to_string(res.result_int()));
  co_return res.body();
}

/// The exposition's samples by series ("name{labels}"); a line that is none, or repeats a series,
/// counts in `bad`.
inline std::map<std::string, double> parse(const std::string& text, int& bad) {
  static const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)"                          // the name,
                                 R"((?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})?))" // labels,
                                 R"( ([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|[-+]Inf|NaN))"); // value
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    if (!std::regex_match(line, m, sample) || !samples.emplace(m[1], std::stod(m[2])).second) {
      ++bad;
      std::cout << "not a sample, or a series again: " << line << '\n';
    }
  }
  return samples;
}

/// The sum of the samples of `metric` whose labels contain `with`.
inline double total(const std::map<std::string, double>& samples, const std::string& metric,
                    const std::string& with = "") {
  double sum = 0;
  for (const auto& [series, v] : samples)
    sum += series.starts_with(metric + '{') && series.find(with) != std::string::npos ? v : 0;
  return sum;
}
