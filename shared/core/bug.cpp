#include "shared/core/bug.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "shared/core/log.h"

namespace kiln {
namespace {

/// -1: not decided yet (the environment decides on first use); 0 or 1 otherwise.
std::atomic<int> gFatal{-1};
std::mutex gCountMutex;

}  // namespace

bool bugsAreFatal() {
  int fatal = gFatal.load();
  if (fatal < 0) {
    const char* env = std::getenv("KILN_FATAL_BUGS");
    fatal = env && std::strcmp(env, "1") == 0 ? 1 : 0;
    int expected = -1;
    gFatal.compare_exchange_strong(expected, fatal);
    fatal = gFatal.load();
  }
  return fatal == 1;
}

void setBugsFatal(bool fatal) { gFatal.store(fatal ? 1 : 0); }

void reportBug(const char* file, int line, const char* invariant, std::string_view details,
               unsigned long& count) {
  unsigned long n = 0;
  {
    std::lock_guard<std::mutex> lock(gCountMutex);
    n = ++count;
  }
  const bool fatal = bugsAreFatal();
  // Production logs the 1st, 2nd, 4th, 8th, ... breach of a call site.
  if (!fatal && (n & (n - 1)) != 0) return;
  Logger("bug").error("invariant broken: this is a bug in Kiln",
                      {{"invariant", invariant},
                       {"details", std::string(details)},
                       {"at", std::string(file) + ":" + std::to_string(line)},
                       {"occurrences", std::to_string(n)}});
  if (fatal) std::abort();
}

}  // namespace kiln
