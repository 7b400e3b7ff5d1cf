// HTTP basic authentication for API tests: an htpasswd file's content and the header a client
// sends.
#pragma once

#include <openssl/evp.h>

#include <string>

namespace kiln::test {

/// bcrypt hashes (cost 4, made with `htpasswd -nbB -C 4`): admin / "s3cret", viewer / "watch".
inline constexpr const char* kTestHtpasswd =
    "admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n"
    "viewer:$2y$04$Ut1kUByzwUQqb1kDwemubuDPq4.nQ6YTJBQlQW.7NJxJy1CZssEoi\n";

/// The Authorization header's value: "Basic " and base64 of "user:pass".
inline std::string basicAuthorization(const std::string& user, const std::string& pass) {
  const std::string raw = user + ":" + pass;
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()),
                                static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

}  // namespace kiln::test
