#include "tests/support/replay_command_runner.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

namespace kiln::test {
namespace {

constexpr std::string_view kStdoutMarker = "==> stdout <==";
constexpr std::string_view kStderrMarker = "==> stderr <==";

std::string quoteArg(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

using EnvList = std::vector<std::pair<std::string, std::string>>;

std::string joinEnv(EnvList env) {
  std::sort(env.begin(), env.end());
  std::string out = "[";
  for (size_t i = 0; i < env.size(); ++i) {
    out += (i ? ", " : "") + env[i].first + "=" + env[i].second;
  }
  return out + "]";
}

std::string indent(const std::string& lines) {
  std::string out;
  size_t pos = 0;
  while (pos < lines.size()) {
    const size_t eol = lines.find('\n', pos);
    const size_t end = eol == std::string::npos ? lines.size() : eol + 1;
    out += "    " + lines.substr(pos, end - pos);
    pos = end;
  }
  return out;
}

bool sameEnv(EnvList a, EnvList b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

std::filesystem::path sourceDir() {
  // KILN_SOURCE_DIR (tests/CMakeLists.txt), not __FILE__: ccache's base_dir makes __FILE__
  // relative to the build directory.
  return KILN_SOURCE_DIR;
}

std::filesystem::path testDataDir() {
  if (const char* dir = std::getenv("KILN_TEST_DATA_DIR"); dir && *dir) {
    return dir;
  }
  return sourceDir() / "tests" / "data";
}

std::filesystem::path testDataPath(std::string_view relative) {
  return testDataDir() / std::filesystem::path(relative);
}

Result<CommandOutput> parseRecordedOutput(std::string_view text) {
  CommandOutput output;
  std::string* section = nullptr;
  bool sawStdout = false;
  bool sawStderr = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    const size_t end = eol == std::string_view::npos ? text.size() : eol + 1;
    const std::string_view line = text.substr(pos, end - pos);
    std::string_view bare = line;
    if (!bare.empty() && bare.back() == '\n') bare.remove_suffix(1);
    pos = end;
    if (bare == kStdoutMarker || bare == kStderrMarker) {
      bool& seen = bare == kStdoutMarker ? sawStdout : sawStderr;
      if (seen) return invalid("recorded output has two \"" + std::string(bare) + "\" sections");
      seen = true;
      section = bare == kStdoutMarker ? &output.out : &output.err;
      continue;
    }
    if (section) {
      section->append(line);
      continue;
    }
    // The header: comments, blank lines and "exit: N".
    if (bare.empty() || bare.front() == '#') continue;
    if (bare.starts_with("exit:")) {
      std::string_view value = bare.substr(5);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos) {
        return invalid("recorded output has a bad exit code: " + std::string(bare));
      }
      output.exitCode = std::stoi(std::string(value));
      continue;
    }
    return invalid("recorded output has an unknown header line: " + std::string(bare));
  }
  return output;
}

Result<CommandOutput> loadRecordedOutput(std::string_view relative) {
  const auto path = testDataPath("commands") / std::filesystem::path(relative);
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound("no recorded output at " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = parseRecordedOutput(text.str());
  if (!parsed) return invalid(path.string() + ": " + parsed.error().message);
  return parsed;
}

CommandOutput recordedOutput(std::string_view relative) {
  auto output = loadRecordedOutput(relative);
  if (!output) FAIL(output.error().message);
  return *output;
}

std::string joinArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out.push_back(' ');
    out += quoteArg(a);
  }
  return out;
}

std::string diffArgv(const std::vector<std::string>& expected,
                     const std::vector<std::string>& actual) {
  // Longest common subsequence over argv elements; argv vectors are short.
  const size_t n = expected.size();
  const size_t m = actual.size();
  std::vector<std::vector<size_t>> lcs(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] =
          expected[i] == actual[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && expected[i] == actual[j]) {
      out += "  " + quoteArg(expected[i++]) + "\n";
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "- " + quoteArg(expected[i++]) + "\n";
    } else {
      out += "+ " + quoteArg(actual[j++]) + "\n";
    }
  }
  return out;
}

ReplayCommandRunner::ReplayCommandRunner() : owner_(std::this_thread::get_id()) {}

ReplayCommandRunner::~ReplayCommandRunner() {
  // A REQUIRE that failed is unwinding the test: the leftovers are a consequence, not news.
  if (std::uncaught_exceptions() > 0 || std::this_thread::get_id() != owner_) return;
  std::string report;
  {
    std::lock_guard lock(mutex_);
    if (!failTest_) return;
    if (next_ < script_.size() && !allowUnconsumed_) {
      report += std::to_string(script_.size() - next_) + " expected command(s) never ran:\n";
      for (size_t i = next_; i < script_.size(); ++i) {
        report += "  #" + std::to_string(i + 1) + " " + joinArgv(script_[i].argv) + "\n";
      }
    }
    if (mismatches_.size() > reportedMismatches_) {
      for (size_t i = 0; i < mismatches_.size(); ++i) report += mismatches_[i] + "\n";
    }
  }
  if (!report.empty()) {
    FAIL_CHECK("ReplayCommandRunner: the script did not run as written\n" + report);
  }
}

ReplayCommandRunner& ReplayCommandRunner::expect(ExpectedCommand command) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(command));
  return *this;
}

ReplayCommandRunner& ReplayCommandRunner::expect(std::vector<std::string> argv,
                                                 CommandOutput output) {
  ExpectedCommand command;
  command.argv = std::move(argv);
  command.output = std::move(output);
  return expect(std::move(command));
}

ReplayCommandRunner& ReplayCommandRunner::expect(std::vector<std::string> argv,
                                                 std::string_view fixture) {
  return expect(std::move(argv), recordedOutput(fixture));
}

void ReplayCommandRunner::setFailTestOnMismatch(bool fail) {
  std::lock_guard lock(mutex_);
  failTest_ = fail;
}

void ReplayCommandRunner::allowUnconsumed() {
  std::lock_guard lock(mutex_);
  allowUnconsumed_ = true;
}

Result<CommandOutput> ReplayCommandRunner::run(const Command& command) {
  std::string mismatch;
  bool failTest = false;
  {
    std::lock_guard lock(mutex_);
    received_.push_back(command);
    const size_t number = received_.size();
    if (next_ >= script_.size()) {
      mismatch = "ReplayCommandRunner: unexpected command #" + std::to_string(number) +
                 " (the script has " + std::to_string(script_.size()) +
                 " commands, all consumed)\n  actual: " + joinArgv(command.argv);
    } else {
      const ExpectedCommand& expected = script_[next_];
      std::string problems;
      if (expected.argv != command.argv) {
        problems += "  expected: " + joinArgv(expected.argv) + "\n" +
                    "  actual:   " + joinArgv(command.argv) + "\n" +
                    "  argv diff (- expected, + actual):\n" +
                    indent(diffArgv(expected.argv, command.argv));
      }
      if (expected.env && !sameEnv(*expected.env, command.env)) {
        problems += "  env expected: " + joinEnv(*expected.env) + "\n" +
                    "  env actual:   " + joinEnv(command.env) + "\n";
      }
      if (expected.stdinData && expected.stdinData != command.stdinData) {
        problems += "  stdin expected: " + quoteArg(*expected.stdinData) + "\n" +
                    "  stdin actual:   " + quoteArg(command.stdinData.value_or("")) + "\n";
      }
      if (problems.empty()) {
        ++next_;
        if (expected.error) return std::unexpected(*expected.error);
        return expected.output;
      }
      mismatch = "ReplayCommandRunner: command #" + std::to_string(number) +
                 " does not match the script\n" + problems;
      if (!mismatch.empty() && mismatch.back() == '\n') mismatch.pop_back();
    }
    mismatches_.push_back(mismatch);
    failTest = failTest_ && std::this_thread::get_id() == owner_;
    if (failTest) ++reportedMismatches_;
  }
  // NOTE(kiln): Catch2 assertions are not thread-safe, so only the test's own thread reports
  // here; mismatches on other threads still show up in allConsumed().
  if (failTest) FAIL_CHECK(mismatch);
  return internalError(mismatch);
}

bool ReplayCommandRunner::allConsumed() const {
  std::lock_guard lock(mutex_);
  return next_ == script_.size() && mismatches_.empty();
}

std::string ReplayCommandRunner::describeRemaining() const {
  std::lock_guard lock(mutex_);
  std::string out;
  if (next_ < script_.size()) {
    out += std::to_string(script_.size() - next_) + " expected command(s) never ran:\n";
    for (size_t i = next_; i < script_.size(); ++i) {
      out += "  #" + std::to_string(i + 1) + " " + joinArgv(script_[i].argv) + "\n";
    }
  }
  for (const auto& m : mismatches_) out += m + "\n";
  return out;
}

std::vector<Command> ReplayCommandRunner::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

size_t ReplayCommandRunner::remaining() const {
  std::lock_guard lock(mutex_);
  return script_.size() - next_;
}

void checkAllConsumed(const ReplayCommandRunner& runner) {
  INFO(runner.describeRemaining());
  CHECK(runner.allConsumed());
}

}  // namespace kiln::test
