// File: server/storage/storage_metrics.h
//
// kiln_db_transaction_duration_seconds (histogram, labelled by mode: read or write): how long
// a storage transaction stays open, from begin() to its commit or rollback, on either back
// end. A TransactionTimer sits in each back end's Transaction and observes once.
#pragma once

#include <chrono>

#include "shared/metrics/metrics.h"

namespace kiln::server {

/// The histogram child for read (`write` false) or write transactions.
metrics::Histogram& dbTransactionHistogram(bool write);

/// Registers the family (so a scrape lists it before the first transaction).
void registerStorageMetrics();

/// Observes the time from its construction to finish() (or its destruction), once.
class TransactionTimer {
 public:
  explicit TransactionTimer(bool write)
      : histogram_(&dbTransactionHistogram(write)), start_(std::chrono::steady_clock::now()) {}
  ~TransactionTimer() { finish(); }
  TransactionTimer(const TransactionTimer&) = delete;
  TransactionTimer& operator=(const TransactionTimer&) = delete;

  void finish() {
    if (histogram_ == nullptr) return;
    histogram_->observeSince(start_);
    histogram_ = nullptr;
  }

 private:
  metrics::Histogram* histogram_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::server
