// File: shared/core/bug.h
//
// KILN_BUG(invariant, details): an invariant whose breach is a bug in Kiln, not a failure of
// the environment (after Envoy's ENVOY_BUG). When `invariant` is false:
//  - where bugs are fatal (every test binary, and any process started with KILN_FATAL_BUGS=1
//    in its environment: the out-of-process suites set it) it logs the breach and aborts, so a
//    test stops at the first impossible state instead of carrying on;
//  - in production it logs an error (the 1st, 2nd, 4th, 8th, ... breach of each call site, so
//    a breach in a loop cannot flood the log) and the caller carries on with its fallback.
// It evaluates to the invariant's value: `if (!KILN_BUG(to, "...")) return fallback;`.
#pragma once

#include <string_view>

namespace kiln {

/// Whether a breached invariant aborts the process (see the file comment).
bool bugsAreFatal();
/// Makes breaches fatal (tests) or not. Without a call, KILN_FATAL_BUGS=1 decides.
void setBugsFatal(bool fatal);
/// A breach of `invariant` (its source text) at `file`:`line`; aborts when bugs are fatal.
/// `count` is the call site's counter of breaches.
void reportBug(const char* file, int line, const char* invariant, std::string_view details,
               unsigned long& count);

}  // namespace kiln

#define KILN_BUG(invariant, details)                                                  \
  ([&]() -> bool {                                                                    \
    if (invariant) return true;                                                       \
    static unsigned long kiln_bug_count_ = 0;                                         \
    ::kiln::reportBug(__FILE__, __LINE__, #invariant, (details), kiln_bug_count_);    \
    return false;                                                                     \
  }())
