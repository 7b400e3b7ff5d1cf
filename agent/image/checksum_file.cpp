// File: agent/image/checksum_file.cpp
//
// findChecksumInFile and resolveChecksumUrl. The line rules are ironic-python-agent's regular
// expressions written out: a digest is a whole whitespace-separated token of 32, 64 or 128
// hex digits, first or last on its line; a line is about the image when it ends with
// " name" or " *name", or holds " (name) ".
#include "agent/image/checksum_file.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "shared/core/strings.h"
#include "shared/http/url.h"

namespace kiln::agent {
namespace {

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool isDigest(std::string_view token) {
  return (token.size() == 32 || token.size() == 64 || token.size() == 128) &&
         std::all_of(token.begin(), token.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && isSpace(line[pos])) ++pos;
    size_t end = pos;
    while (end < line.size() && !isSpace(line[end])) ++end;
    if (end > pos) out.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

/// "DIGEST  name", "DIGEST *name" (the name ends the line after whitespace, maybe with '*'),
/// or "ALGO (name) = DIGEST" (whitespace, "(name)", whitespace).
bool namesFile(std::string_view line, std::string_view name) {
  if (line.ends_with(name)) {
    std::string_view before = line.substr(0, line.size() - name.size());
    if (before.ends_with('*')) before.remove_suffix(1);
    if (!before.empty() && isSpace(before.back())) return true;
  }
  const std::string paren = "(" + std::string(name) + ")";
  for (size_t at = line.find(paren); at != std::string_view::npos; at = line.find(paren, at + 1)) {
    const size_t after = at + paren.size();
    if (at > 0 && isSpace(line[at - 1]) && after < line.size() && isSpace(line[after])) return true;
  }
  return false;
}

/// The last path segment of an image URL (no query), as ironic-python-agent compares it.
std::string fileNameOf(const std::string& url) {
  auto parsed = parseHttpUrl(url, UserInfo::Accept);
  if (!parsed) return "";
  std::string_view path = parsed->target;
  path = path.substr(0, path.find('?'));
  return std::string(path.substr(path.rfind('/') + 1));
}

}  // namespace

Result<std::string> findChecksumInFile(std::string_view text, std::string_view fileName,
                                       std::string_view source) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line = trim(text.substr(pos, end - pos));
    if (!line.empty()) lines.push_back(std::move(line));
    pos = end + 1;
  }
  const std::string where = "the checksum file " + std::string(source);
  if (lines.empty()) return invalid("Invalid " + where + ": it is empty");
  if (lines.size() == 1 && tokens(lines[0]).size() == 1) {
    // A file of just the digest.
    if (isDigest(lines[0])) return lines[0];
    return invalid("Invalid " + where + ": it holds no valid checksum");
  }
  for (const auto& line : lines) {
    if (line.starts_with('#') || fileName.empty() || !namesFile(line, fileName)) continue;
    const auto parts = tokens(line);
    if (parts.size() >= 2 && isDigest(parts.front())) return std::string(parts.front());
    if (parts.size() >= 2 && isDigest(parts.back())) return std::string(parts.back());
  }
  return invalid("Invalid " + where + ": it has no checksum for " +
                 (fileName.empty() ? std::string("the image") : std::string(fileName)));
}

Result<void> resolveChecksumUrl(StepContext& ctx, ImageInfo& info) {
  if (info.checksumUrl.empty()) return {};
  if (ctx.http == nullptr)
    return internalError("No HTTP client to download the checksum file with");
  HttpRequest request = KILN_TRY(imageRequest(info, info.checksumUrl));
  const std::string shown = request.url;  // without user information
  ctx.log.info("Downloading the checksum file", {{"url", shown}});
  std::string body;
  auto response = ctx.http->stream(request, [&](std::string_view chunk) -> Result<void> {
    if (body.size() + chunk.size() > kMaxChecksumFileBytes) {
      return invalid("The checksum file " + shown + " is larger than " +
                     std::to_string(kMaxChecksumFileBytes) + " bytes");
    }
    body.append(chunk);
    return {};
  });
  if (!response) {
    if (response.error().code == ErrorCode::InvalidArgument)
      return std::unexpected(response.error());
    return fail(response.error().code,
                "Cannot download the checksum file " + shown + ": " + response.error().message);
  }
  if (response->status != 200) {
    return fail(response->status == 404 ? ErrorCode::NotFound : ErrorCode::Unavailable,
                "Cannot download the checksum file " + shown + ": HTTP status " +
                    std::to_string(response->status));
  }
  const std::string digest = KILN_TRY(findChecksumInFile(
      body, info.urls.empty() ? std::string() : fileNameOf(info.urls.front()), shown));
  if (info.checksumAlgorithmFixed) {
    // Checked as an os_hash_value given inline would be.
    auto spec = KILN_TRY(
        parseChecksumSpec(std::string(toString(info.checksumAlgorithm)) + ":" + digest, true));
    info.checksum = std::move(spec.second);
  } else {
    auto [algorithm, hex] = KILN_TRY(parseChecksumSpec(digest, ctx.md5Allowed));
    info.checksumAlgorithm = algorithm;
    info.checksum = std::move(hex);
  }
  info.checksumUrl.clear();
  return {};
}

}  // namespace kiln::agent
