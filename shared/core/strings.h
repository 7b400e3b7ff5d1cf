// File: shared/core/strings.h
//
// Small string helpers shared by the server and the agent: the one home for trimming,
// ASCII case, splitting lists and parsing integers. All are pure and ASCII only (no locale).
//
// Where callers differ in what they accept, the difference is a parameter, not another copy:
//   trim        which characters count as space (`chars`): kSpace " \t\r\n" by default,
//               kAsciiSpace (what std::isspace takes in the C locale) or e.g. " \t";
//   splitTrimmed the same for each item;
//   split       no trimming and every item kept, for callers that reject empty items
//               themselves or number them (Python's str.split(sep));
//   parseInt    IntSyntax::Digits (std::from_chars: an optional '-' for signed types, then
//               digits, nothing else) or IntSyntax::Strtol (also leading space and a '+'
//               sign, as std::stol took them).
//
// UTF-8: utf8SequenceLength checks one sequence; escapeInvalidUtf8 and truncateUtf8 make text
// from an untrusted source (an agent's log line) safe to put in JSON, which must be UTF-8.
#pragma once

#include <charconv>
#include <concepts>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln {

/// Space, tab, carriage return and newline: what trim and splitTrimmed remove by default.
inline constexpr std::string_view kSpace = " \t\r\n";
/// What std::isspace counts as space in the C locale (adds vertical tab and form feed).
inline constexpr std::string_view kAsciiSpace = " \t\n\v\f\r";

/// `text` without leading and trailing characters of `chars`. Pure.
std::string trim(std::string_view text, std::string_view chars = kSpace);

/// As trim, as a view into `text`. Pure.
std::string_view trimView(std::string_view text, std::string_view chars = kSpace);

/// `text` without trailing characters of `chars`, as a view into `text`. Pure.
std::string_view trimEnd(std::string_view text, std::string_view chars = kSpace);

/// `text` with A-Z lowered (ASCII only; other bytes as they are). Pure.
std::string asciiLower(std::string_view text);

/// `c` lowered when it is A-Z. Pure.
char asciiLower(char c);

/// `text` with a-z raised (ASCII only; other bytes as they are). Pure.
std::string asciiUpper(std::string_view text);

/// True when `a` and `b` are equal ignoring ASCII case. Pure.
bool equalsIgnoreCase(std::string_view a, std::string_view b);

/// The items of `text` between `sep`s, each trimmed of `chars`, empty ones dropped:
/// splitTrimmed(" a, b,,c ", ',') is {"a", "b", "c"}; "" and " , " give {}. Pure.
std::vector<std::string> splitTrimmed(std::string_view text, char sep = ',',
                                      std::string_view chars = kSpace);

/// Every item of `text` between `sep`s as it is, as views into `text` (Python's
/// str.split(sep)): split("a,,b", ',') is {"a", "", "b"}; "" gives {""}. Pure.
std::vector<std::string_view> split(std::string_view text, char sep);

/// The length of the valid UTF-8 sequence starting at `text[i]` (1 for ASCII), or 0 when the
/// bytes there are not one (a stray continuation byte, a cut sequence, an overlong form, a
/// surrogate, a value past U+10FFFF). `i` must be < text.size(). Pure.
size_t utf8SequenceLength(std::string_view text, size_t i);

/// `text` with every byte that is not part of a valid UTF-8 sequence written as the four
/// characters \xNN (NN its value in upper-case hex), so the result is valid UTF-8 and the
/// bytes stay readable. Pure.
std::string escapeInvalidUtf8(std::string_view text);

/// The longest prefix of `text` of at most `maxBytes` bytes that does not cut a UTF-8
/// sequence (invalid bytes count as sequences of one). Pure.
std::string_view truncateUtf8(std::string_view text, size_t maxBytes);

/// What parseInt accepts besides the digits (see the file comment).
enum class IntSyntax {
  Digits,  ///< std::from_chars: optional '-' (signed types only) then decimal digits
  Strtol,  ///< also leading kAsciiSpace and a '+' sign, as std::stol and strtol
};

namespace detail {
std::unexpected<Error> notAnInteger(std::string_view text);
std::unexpected<Error> integerOutOfRange(std::string_view text, const std::string& min,
                                         const std::string& max);
}  // namespace detail

/// The integer `text` spells in base 10, the whole text, within [min, max]. "-0" is 0 for
/// signed types; nothing but digits is accepted for unsigned ones (IntSyntax::Digits).
/// InvalidArgument "'<text>' is not an integer" (also when it overflows T) or "<text> is not
/// between <min> and <max>": callers wrap it in the words their own messages need.
template <std::integral T>
Result<T> parseInt(std::string_view text, T min = std::numeric_limits<T>::min(),
                   T max = std::numeric_limits<T>::max(), IntSyntax syntax = IntSyntax::Digits) {
  static_assert(!std::same_as<T, bool>, "parseInt reads numbers, not bool");
  std::string_view digits = text;
  if (syntax == IntSyntax::Strtol) {
    digits.remove_prefix(std::min(digits.size(), digits.find_first_not_of(kAsciiSpace)));
    if (!digits.empty() && digits.front() == '+') {
      digits.remove_prefix(1);
      if (digits.empty() || digits.front() < '0' || digits.front() > '9') {
        return detail::notAnInteger(text);
      }
    }
  }
  T value{};
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (ec != std::errc() || ptr != end) return detail::notAnInteger(text);
  if (value < min || value > max) {
    return detail::integerOutOfRange(text, std::to_string(min), std::to_string(max));
  }
  return value;
}

}  // namespace kiln
