// File: tests/fuzz/fuzz_server.h
//
// The in-process kiln-server the API fuzz targets (json_body, http_request) call: a ServerApp
// over an in-memory SQLite database with a FakeClock, every hardware type enabled, and no way
// out of the process (ipmitool and Redfish calls fail as if the BMC were unreachable; the pxe
// boot interface writes under a private directory in /tmp). It holds one resource of each kind
// with fixed UUIDs, so corpus requests can name them:
//
//   chassis   44444444-4444-4444-8444-444444444444
//   node      11111111-1111-4111-8111-111111111111  "fuzz-node", fake-hardware, trait CUSTOM_FUZZ
//   portgroup 33333333-3333-4333-8333-333333333333  "fuzz-pg" on the node
//   port      22222222-2222-4222-8222-222222222222  52:54:00:12:34:56 on the node
//   template  55555555-5555-4555-8555-555555555555  CUSTOM_FUZZ (raid.apply_configuration)
//
// The node has been looked up once; "@TOKEN@" anywhere in a request stands for its agent token.
//
// Requests are text (the corpus files of both targets are readable):
//
//   METHOD /path?query\n
//   header-name: value\n        (any number; names are lowercased)
//   \n
//   body
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/http.h"
#include "server/server_app.h"
#include "tests/support/fake_clock.h"

namespace kiln::fuzz {

inline constexpr const char* kNodeUuid = "11111111-1111-4111-8111-111111111111";
inline constexpr const char* kPortUuid = "22222222-2222-4222-8222-222222222222";
inline constexpr const char* kPortgroupUuid = "33333333-3333-4333-8333-333333333333";
inline constexpr const char* kChassisUuid = "44444444-4444-4444-8444-444444444444";
inline constexpr const char* kTemplateUuid = "55555555-5555-4555-8555-555555555555";
inline constexpr const char* kPortMac = "52:54:00:12:34:56";
inline constexpr const char* kVolumeConnectorUuid = "66666666-6666-4666-8666-666666666666";
inline constexpr const char* kVolumeTargetUuid = "77777777-7777-4777-8777-777777777777";

/// Parses the text form above; nullopt when there is no "METHOD TARGET" line.
std::optional<server::ApiRequest> parseRequestText(std::string_view text);

class FuzzServer {
 public:
  /// The process's server, built on first use. Before every request but the first, the
  /// database is put back as it was after the fixture was built (rows the request added are
  /// deleted, changed or deleted fixture rows restored, traits reset): every input starts from
  /// the same state, so a crash reproduces from its input alone. KILN_FUZZ_REBUILD=1 builds a
  /// whole new server instead (slower; to rule out state the reset misses).
  static FuzzServer& instance();

  /// Substitutes "@TOKEN@", calls ApiService::handle, waits until the conductor is idle, and
  /// aborts (a libFuzzer crash) on a 5xx or a malformed body.
  server::ApiResponse call(server::ApiRequest request);

  ~FuzzServer();

 private:
  FuzzServer();
  void build();
  void mustCall(const std::string& method, const std::string& target, const std::string& body);
  void takeSnapshot();
  void restoreSnapshot();

  std::string tempDir_;
  std::shared_ptr<test::FakeClock> clock_;
  std::unique_ptr<server::ServerApp> app_;
  std::string token_;
  bool rebuild_ = false;
  bool dirty_ = false;
  /// The fixture's rows per resource (index: server::Resource) and the node's traits.
  std::vector<std::vector<server::Record>> rows_;
  std::vector<std::string> traits_;
};

/// Aborts unless `response` could be an answer of kiln-server: a status below 500, and a body
/// that is valid UTF-8 JSON when it claims to be JSON (and for Ironic's double-encoded errors,
/// an error_message that is itself JSON).
void checkResponse(const server::ApiRequest& request, const server::ApiResponse& response);

}  // namespace kiln::fuzz
