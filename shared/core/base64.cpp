#include "shared/core/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

namespace kiln {
namespace {

bool standardChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
}

std::unexpected<Error> bad(const std::string& why) {
  return invalid("Invalid base64 text: " + why);
}

}  // namespace

std::string base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');  // + the NUL EVP_EncodeBlock writes
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

std::string base64UrlEncode(std::string_view bytes) {
  std::string out = base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

Result<std::string> base64Decode(std::string_view text, Base64Mode mode) {
  std::string clean;
  clean.reserve(text.size() + 2);
  for (char c : text) {
    if (mode == Base64Mode::Lenient && std::isspace(static_cast<unsigned char>(c))) continue;
    if (mode != Base64Mode::Strict && (c == '-' || c == '_')) {
      clean += c == '-' ? '+' : '/';
      continue;
    }
    if (mode == Base64Mode::UrlSafe && (c == '+' || c == '/')) {
      return bad("'" + std::string(1, c) + "' is not in the URL-safe alphabet");
    }
    clean += c;
  }
  if (mode == Base64Mode::UrlSafe && clean.find('=') == std::string::npos) {
    if (clean.size() % 4 == 1) return bad("the length is not a whole number of groups");
    clean.append((4 - clean.size() % 4) % 4, '=');
  }
  if (clean.size() % 4 != 0) {
    return bad("the length (" + std::to_string(clean.size()) +
               " characters) is not a multiple of 4");
  }
  size_t padding = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    const char c = clean[i];
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return bad("padding '=' in the middle");
    if (!standardChar(c)) {
      if (std::isprint(static_cast<unsigned char>(c))) {
        return bad("'" + std::string(1, c) + "' at position " + std::to_string(i));
      }
      return bad("a non-printable character at position " + std::to_string(i));
    }
  }
  if (padding > 2) return bad("more than two padding characters");
  if (clean.empty()) return std::string();
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) return bad("rejected by the decoder");
  // EVP_DecodeBlock counts the padding as zero bytes.
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

}  // namespace kiln
