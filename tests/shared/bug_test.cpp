#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "shared/core/bug.h"
#include "tests/support/log_capture.h"

namespace {

/// Fatal bugs stay fatal for the rest of the run, whatever a test did.
struct FatalAgainAtEnd {
  ~FatalAgainAtEnd() { kiln::setBugsFatal(true); }
};

int breach(int n) { return KILN_BUG(n < 0, "n is " + std::to_string(n)) ? 1 : 0; }

}  // namespace

TEST_CASE("KILN_BUG is true while its invariant holds and costs nothing else",
          "[shared][core][bug]") {
  kiln::test::LogCapture log;
  CHECK(breach(-1) == 1);
  CHECK(log.text().empty());
}

TEST_CASE("KILN_BUG in production logs a breach, throttled, and lets the caller carry on",
          "[shared][core][bug]") {
  FatalAgainAtEnd restore;
  kiln::setBugsFatal(false);
  kiln::test::LogCapture log;
  for (int i = 1; i <= 5; ++i) CHECK(breach(i) == 0);
  const std::string text = log.text();
  CHECK_THAT(text, Catch::Contains("invariant broken: this is a bug in Kiln"));
  CHECK_THAT(text, Catch::Contains("invariant=\"n < 0\""));
  CHECK_THAT(text, Catch::Contains("details=\"n is 1\""));
  // The 1st, 2nd and 4th breach of the call site are logged, not the 3rd and 5th.
  CHECK_THAT(text, Catch::Contains("occurrences=4"));
  CHECK_THAT(text, !Catch::Contains("occurrences=3"));
  CHECK_THAT(text, !Catch::Contains("occurrences=5"));
}

TEST_CASE("KILN_BUG aborts where bugs are fatal (tests)", "[shared][core][bug]") {
  REQUIRE(kiln::bugsAreFatal());  // the test main made them so
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not the test framework's handler: die of it
    kiln::test::LogCapture quiet;
    breach(3);
    _exit(0);  // not reached when the breach aborts
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
}
