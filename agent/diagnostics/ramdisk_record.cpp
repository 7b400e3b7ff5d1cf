#include "agent/diagnostics/ramdisk_record.h"

#include <algorithm>

#include "shared/core/secrets.h"

namespace kiln::agent {
namespace {

/// The first `limit` bytes of `text` into `kept`; returns how many were left out.
size_t keepHead(std::string text, size_t limit, std::string& kept) {
  const size_t dropped = text.size() > limit ? text.size() - limit : 0;
  if (dropped) text.resize(limit);
  kept = std::move(text);
  return dropped;
}

}  // namespace

void RamdiskRecord::addSecret(std::string_view secret) {
  if (secret.size() < 4) return;  // masking "a" everywhere would hide everything, protect nothing
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(secrets_.begin(), secrets_.end(), secret) == secrets_.end()) {
    secrets_.emplace_back(secret);
  }
}

std::string RamdiskRecord::mask(std::string_view text) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maskLocked(text);
}

std::string RamdiskRecord::maskLocked(std::string_view text) const {
  std::string out(text);
  for (const auto& secret : secrets_) maskSecretIn(out, secret);
  return out;
}

void RamdiskRecord::recordCommand(CommandRecord record) {
  record.outDropped += keepHead(std::move(record.out), limits_.streamBytes, record.out);
  record.errDropped += keepHead(std::move(record.err), limits_.streamBytes, record.err);
  std::lock_guard<std::mutex> lock(mutex_);
  commandBytes_ += record.bytes();
  commands_.push_back(std::move(record));
  while (commandBytes_ > limits_.commandBytes && commands_.size() > 1) {
    commandBytes_ -= commands_.front().bytes();
    commands_.pop_front();
    ++droppedCommands_;
  }
}

void RamdiskRecord::appendLogLine(std::string_view line) {
  std::lock_guard<std::mutex> lock(mutex_);
  lines_.emplace_back(line.substr(0, limits_.logBytes));
  logBytes_ += lines_.back().size();
  while (logBytes_ > limits_.logBytes && lines_.size() > 1) {
    logBytes_ -= lines_.front().size();
    lines_.pop_front();
    ++droppedLines_;
  }
}

std::vector<CommandRecord> RamdiskRecord::commands() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CommandRecord> out(commands_.begin(), commands_.end());
  for (auto& c : out) {
    c.command = maskLocked(c.command);
    c.out = maskLocked(c.out);
    c.err = maskLocked(c.err);
    c.error = maskLocked(c.error);
  }
  return out;
}

size_t RamdiskRecord::droppedCommands() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return droppedCommands_;
}

std::string RamdiskRecord::log() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  if (droppedLines_) {
    out = "[" + std::to_string(droppedLines_) + " older log lines dropped]\n";
  }
  for (const auto& line : lines_) out += line;
  return maskLocked(out);
}

Result<CommandOutput> RecordingCommandRunner::run(const Command& command) {
  CommandRecord record;
  record.started = formatIsoTime(clock_.now());
  record.command = maskUrlsInText(command.display());
  const auto start = clock_.monotonic();
  auto result = inner_.run(command);
  record.seconds = std::chrono::duration<double>(clock_.monotonic() - start).count();
  if (result) {
    record.exitCode = result->exitCode;
    record.out = maskUrlsInText(result->out);
    record.err = maskUrlsInText(result->err);
  } else {
    record.error = maskUrlsInText(result.error().message);
  }
  record_.recordCommand(std::move(record));
  return result;
}

}  // namespace kiln::agent
