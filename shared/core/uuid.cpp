#include "shared/core/uuid.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <random>

#include "shared/core/strings.h"

namespace kiln {
namespace {

std::mt19937_64& threadRng() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return rng;
}

}  // namespace

std::string generateUuid() {
  auto& rng = threadRng();
  std::array<uint8_t, 16> bytes{};
  uint64_t a = rng();
  uint64_t b = rng();
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<uint8_t>(a >> (i * 8));
    bytes[8 + i] = static_cast<uint8_t>(b >> (i * 8));
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

bool isUuidLike(std::string_view text) {
  if (text.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') {
        return false;
      }
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::string normalizeUuid(std::string_view text) {
  std::string out(text);
  if (isUuidLike(text)) {
    out = asciiLower(text);
  }
  return out;
}

}  // namespace kiln
