#include "server/drivers/bmc_requests.h"

#include <utility>

namespace kiln::server {
namespace {

thread_local BmcRequestScope* tInnermost = nullptr;

}  // namespace

BmcRequestScope::BmcRequestScope(std::string nodeUuid, const Clock& clock)
    : nodeUuid_(std::move(nodeUuid)), clock_(clock), outer_(tInnermost) {
  tInnermost = this;
}

BmcRequestScope::~BmcRequestScope() {
  tInnermost = outer_;
  if (outer_ && outer_->nodeUuid_ == nodeUuid_) {
    outer_->dropped_ += dropped_;
    for (auto& r : records_) outer_->add(std::move(r));
  }
}

void BmcRequestScope::add(BmcRequestRecord record) {
  if (records_.size() >= kMaxBmcRequestsPerScope) {
    records_.pop_front();
    ++dropped_;
  }
  records_.push_back(std::move(record));
}

std::vector<BmcRequestRecord> BmcRequestScope::take() {
  std::vector<BmcRequestRecord> out(std::make_move_iterator(records_.begin()),
                                    std::make_move_iterator(records_.end()));
  records_.clear();
  dropped_ = 0;
  return out;
}

void BmcRequestScope::discard() {
  records_.clear();
  dropped_ = 0;
}

bool bmcRequestScopeOpen() { return tInnermost != nullptr; }

void noteBmcRequest(BmcRequestRecord record) {
  BmcRequestScope* scope = tInnermost;
  if (!scope) return;
  record.finishedAt = scope->clock_.now();
  scope->add(std::move(record));
}

std::vector<BmcRequestRecord> takeBmcRequests(std::string_view nodeUuid, size_t* dropped) {
  std::vector<BmcRequestScope*> chain;
  for (BmcRequestScope* s = tInnermost; s; s = s->outer_) {
    if (s->nodeUuid_ == nodeUuid) chain.push_back(s);
  }
  std::vector<BmcRequestRecord> out;
  size_t lost = 0;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    lost += (*it)->dropped();
    for (auto& r : (*it)->take()) out.push_back(std::move(r));
  }
  if (dropped) *dropped = lost;
  return out;
}

std::string boundBmcError(std::string_view text) {
  if (text.size() <= kMaxBmcErrorChars) return std::string(text);
  size_t cut = kMaxBmcErrorChars;
  // Back to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace kiln::server
