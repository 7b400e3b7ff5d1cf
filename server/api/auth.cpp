#include "server/api/auth.h"

#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <sstream>

#include "server/api/errors.h"
#include "shared/core/base64.h"
#include "shared/core/file.h"
#include "shared/core/strings.h"

namespace kiln::server {
namespace {

std::string sha256(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

}  // namespace

Result<std::map<std::string, std::string>> parseHtpasswd(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string user = line.substr(0, colon);
    std::string hash = line.substr(colon + 1);
    if (hash.rfind("$2y$", 0) != 0 && hash.rfind("$2a$", 0) != 0 && hash.rfind("$2b$", 0) != 0) {
      return invalid("Only bcrypt digested passwords are supported for " + user);
    }
    out[user] = hash;
  }
  return out;
}

bool checkBcrypt(const std::string& password, const std::string& hash) {
  crypt_data data{};
  const char* result = crypt_r(password.c_str(), hash.c_str(), &data);
  if (!result || result[0] == '*') return false;
  const std::string computed(result);
  if (computed.size() != hash.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < hash.size(); ++i) diff |= static_cast<unsigned char>(computed[i] ^ hash[i]);
  return diff == 0;
}

Result<std::unique_ptr<Authenticator>> Authenticator::create(const Config& config) {
  std::unique_ptr<Authenticator> auth(new Authenticator(config));
  if (auth->basic_) {
    auto loaded = auth->reloadIfChanged();
    if (!loaded) {
      return invalid("[DEFAULT] http_basic_auth_user_file: " + loaded.error().message);
    }
  }
  return auth;
}

Result<void> Authenticator::reloadIfChanged() {
  struct stat st {};
  const auto& path = config_.httpBasicAuthUserFile;
  if (stat(path.c_str(), &st) != 0) {
    return invalid("Configured auth file " + path + " does not exist");
  }
  const auto mtime = static_cast<std::chrono::system_clock::time_point::rep>(st.st_mtim.tv_sec) *
                         1000000000LL + st.st_mtim.tv_nsec;
  if (mtime_ && *mtime_ == mtime) return {};
  auto text = readFile(path);
  if (!text) return invalid("Configured auth file " + path + " cannot be read");
  hashes_ = KILN_TRY(parseHtpasswd(*text));
  mtime_ = mtime;
  verified_.clear();
  return {};
}

bool Authenticator::verify(const std::string& user, const std::string& password) {
  std::string hash;
  std::string key;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reloadIfChanged()) return false;
    auto it = hashes_.find(user);
    if (it == hashes_.end()) return false;
    hash = it->second;
    key = sha256(user + '\0' + password + '\0' + hash);
    if (verified_.count(key)) return true;
  }
  if (!checkBcrypt(password, hash)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (verified_.size() > 4096) verified_.clear();
  verified_.insert(key);
  return true;
}

std::variant<Identity, ApiResponse> Authenticator::authenticate(const ApiRequest& request) {
  if (!basic_) {
    return Identity{"", Role::Admin};
  }
  const auto header = request.header("authorization");
  if (!header || header->empty()) {
    return authErrorResponse(401, "Missing authorization header");
  }
  const auto space = header->find(' ');
  if (space == std::string::npos) {
    return authErrorResponse(400, "Could not parse Authorization header");
  }
  if (!equalsIgnoreCase(std::string_view(*header).substr(0, space), "basic")) {
    return authErrorResponse(400, "Unsupported authorization type \"" + header->substr(0, space) +
                                      "\"");
  }
  std::string token = header->substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.erase(token.begin());
  const auto decoded = base64Decode(token);
  if (token.empty() || !decoded) {
    return authErrorResponse(400, "Could not decode authorization token");
  }
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) {
    return authErrorResponse(400, "Invalid authorization token");
  }
  const std::string user = decoded->substr(0, colon);
  const std::string password = decoded->substr(colon + 1);
  if (!verify(user, password)) {
    return authErrorResponse(401, "Incorrect username or password");
  }
  auto role = config_.userRoles.find(user);
  return Identity{user, role == config_.userRoles.end() ? config_.defaultRole : role->second};
}

}  // namespace kiln::server
