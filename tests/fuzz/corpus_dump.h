// File: tests/fuzz/corpus_dump.h
//
// Where the fuzzers' seed corpora come from (docs/fuzzing.md). With KILN_FUZZ_DUMP=<dir> in
// the environment, the in-process API tests (tests/support/test_api.cpp) write what they send
// and get into <dir>:
//   config/<hash>         each configuration a TestApi was built from
//   request/<hash>        each request, in the text form of tests/fuzz/fuzz_server.h
//   agent_answers/<n>     per TestApi, the answers to its /v1/lookup and /v1/heartbeat
//                         requests in order, in the form of agent_answers_fuzzer.cpp
// tests/fuzz/make_corpus.py turns a dump into tests/fuzz/corpus/. Without the variable
// nothing is written.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "server/api/http.h"

namespace kiln::fuzz {

inline const char* dumpDirectory() {
  static const char* dir = std::getenv("KILN_FUZZ_DUMP");
  return dir && *dir ? dir : nullptr;
}

/// Writes `text` to <dump>/<kind>/<name> (appending when `append`).
inline void dumpFile(const std::string& kind, const std::string& name, const std::string& text,
                     bool append = false) {
  const std::filesystem::path dir = std::filesystem::path(dumpDirectory()) / kind;
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  std::ofstream out(dir / name, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << text;
}

inline std::string dumpName(const std::string& text) {
  char name[17];
  std::snprintf(name, sizeof name, "%016zx", std::hash<std::string>{}(text));
  return name;
}

/// The current TestApi's number (one process runs one test at a time).
inline std::string& dumpSession() {
  static std::string session;
  return session;
}

/// Called when a TestApi is built from `config`.
inline void dumpConfig(const std::string& config) {
  if (!dumpDirectory()) return;
  static int sessions = 0;
  dumpSession() = std::to_string(getpid()) + "-" + std::to_string(++sessions);
  dumpFile("config", dumpName(config), config);
}

/// Called for each request a TestApi sends, with the answer.
inline void dumpExchange(const server::ApiRequest& request, const server::ApiResponse& response) {
  if (!dumpDirectory()) return;
  std::string text = request.method + " " + request.path;
  for (size_t i = 0; i < request.query.size(); ++i) {
    text += (i == 0 ? "?" : "&") + server::urlEncode(request.query[i].first) + "=" +
            server::urlEncode(request.query[i].second);
  }
  text += "\n";
  for (const auto& [name, value] : request.headers) text += name + ": " + value + "\n";
  text += "\n" + request.body;
  dumpFile("request", dumpName(text), text);
  if (request.path == "/v1/lookup" || request.path.starts_with("/v1/heartbeat/")) {
    const std::filesystem::path file =
        std::filesystem::path(dumpDirectory()) / "agent_answers" / dumpSession();
    std::error_code ignored;
    const bool first = !std::filesystem::exists(file, ignored);
    dumpFile("agent_answers", dumpSession(),
             (first ? "" : "\n@@\n") + std::to_string(response.status) + " " + response.body, true);
  }
}

}  // namespace kiln::fuzz
