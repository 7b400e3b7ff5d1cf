// File: server/api/auth.h
//
// Authentication in front of the API (Ironic's `auth_strategy`):
//   noauth      every request is an admin.
//   http_basic  `Authorization: Basic` checked against an Apache htpasswd file of bcrypt hashes
//               ([DEFAULT] http_basic_auth_user_file), as ironic-lib's middleware does: missing
//               or wrong credentials 401 with WWW-Authenticate, a malformed header 400.
// Past Ironic: each user has a role from [http_basic_roles] (admin or observer, default
// [http_basic_roles] default_role = admin). Observers may read everything and get 403 on writes.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <variant>

#include "server/api/http.h"
#include "server/config.h"
#include "shared/core/error.h"

namespace kiln::server {

struct Identity {
  std::string user;
  Role role = Role::Admin;
};

class Authenticator {
 public:
  /// Validates the configuration: with http_basic the user file must be readable and hold only
  /// bcrypt hashes (Ironic refuses to start otherwise).
  static Result<std::unique_ptr<Authenticator>> create(const Config& config);

  /// The caller's identity, or the error response the auth middleware sends. Thread-safe.
  std::variant<Identity, ApiResponse> authenticate(const ApiRequest& request);

  bool enabled() const { return basic_; }

 private:
  Authenticator(const Config& config) : config_(config), basic_(config.authStrategy == "http_basic") {}
  /// Re-reads the user file when it changed on disk (Ironic reads it on every request).
  Result<void> reloadIfChanged();
  bool verify(const std::string& user, const std::string& password);

  const Config& config_;
  bool basic_;
  std::mutex mutex_;
  std::map<std::string, std::string> hashes_;  ///< user -> bcrypt hash
  std::optional<std::chrono::system_clock::time_point::rep> mtime_;
  /// Successful (user, password) checks, so bcrypt's deliberate slowness is paid once per
  /// credential rather than on every request. Keys are SHA-256 digests, never passwords.
  std::unordered_set<std::string> verified_;
};

/// Parses htpasswd text into user -> hash; InvalidArgument naming the user for a non-bcrypt
/// hash (only $2a$, $2b$ and $2y$ are accepted).
Result<std::map<std::string, std::string>> parseHtpasswd(const std::string& text);

/// True if `password` matches the bcrypt `hash` (libcrypt).
bool checkBcrypt(const std::string& password, const std::string& hash);

}  // namespace kiln::server
