// Command-line options of the benchmark programs: `prog <redis-url> [--flag] [--key value] ...`
// (the URL, if given, comes first).
//
//   bench::cli args(argc, argv);
//   auto common = bench::common_options::parse(args);   // url, --quick, --repetitions, --out ...
//   int c = args.integer("--coroutines", 50);
//   args.finish();   // throws on an option nobody asked for (typos fail loudly)
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace corolock::bench {

class cli {
public:
  cli(int argc, char** argv);
  explicit cli(std::vector<std::string> args);

  /// A flag without value (`--quick`).
  bool flag(const std::string& name);
  /// The value of `--name value` (or `--name=value`); the last one wins.
  std::optional<std::string> value(const std::string& name);
  /// Every value of a repeatable option.
  std::vector<std::string> values(const std::string& name);
  std::string string(const std::string& name, std::string fallback);
  long long integer(const std::string& name, long long fallback);
  double number(const std::string& name, double fallback);
  /// A comma-separated list of integers: `--coroutines 50,200,1000`.
  std::vector<long long> integers(const std::string& name, std::vector<long long> fallback);
  /// The first argument if it is not an option (`prog <url> --opt ...`).
  std::optional<std::string> first_positional();
  /// Every argument not used so far that is not an option; call after querying every option.
  std::vector<std::string> rest();
  /// Throws std::invalid_argument naming any option that was never asked for.
  void finish() const;

private:
  struct arg {
    std::string text;
    bool used = false;
  };
  std::vector<arg> args_;
};

/// The options every benchmark program takes.
struct common_options {
  std::string url = "redis://127.0.0.1:6379"; ///< first positional argument
  bool quick = false;                         ///< --quick: shorter runs (bench.sh --quick)
  int repetitions = 0;                        ///< --repetitions N (default: 3 quick, 5 full)
  std::string out;                            ///< --out FILE: JSON lines appended here
  std::string baselines;                      ///< --baselines FILE: JSON lines to compare with
  std::set<std::string> only;                 ///< --scenarios a,b: run only these

  static common_options parse(cli& args);
  bool wants(const std::string& scenario) const { return only.empty() || only.count(scenario) > 0; }
};

} // namespace corolock::bench
