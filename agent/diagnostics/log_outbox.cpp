#include "agent/diagnostics/log_outbox.h"

#include <algorithm>

#include "shared/core/strings.h"

namespace kiln::agent {

void LogOutbox::append(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::lock_guard<std::mutex> lock(mutex_);
  // A line longer than the outbox itself keeps its head only (take() cuts it further).
  line = line.substr(0, std::min(line.size(), maxBytes_));
  lines_.push_back(Line{nextSeq_++, std::string(line)});
  bytes_ += line.size();
  while (bytes_ > maxBytes_ && lines_.size() > 1) {
    bytes_ -= lines_.front().text.size();
    lines_.pop_front();
    ++dropped_;
  }
}

std::optional<protocol::LogBatch> LogOutbox::take(size_t maxBytes, const Mask& mask) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lines_.empty() && dropped_ == 0) return std::nullopt;
  protocol::LogBatch batch;
  batch.firstSeq = lines_.empty() ? nextSeq_ : lines_.front().seq;
  batch.dropped = dropped_;
  size_t bytes = 0;
  for (const Line& line : lines_) {
    // Masked first (a cut must not leave half a secret), then made UTF-8, then cut.
    std::string text = escapeInvalidUtf8(mask ? mask(line.text) : line.text);
    text.resize(truncateUtf8(text, protocol::LogBatch::kMaxLineBytes).size());
    if (!batch.lines.empty() && bytes + text.size() > maxBytes) break;
    bytes += text.size();
    batch.lines.push_back(std::move(text));
  }
  return batch;
}

void LogOutbox::acknowledge(uint64_t lastSeq, uint64_t droppedReported) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!lines_.empty() && lines_.front().seq <= lastSeq) {
    bytes_ -= lines_.front().text.size();
    lines_.pop_front();
  }
  dropped_ -= std::min(dropped_, droppedReported);
}

size_t LogOutbox::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lines_.size();
}

uint64_t LogOutbox::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

}  // namespace kiln::agent
