#include "server/storage/storage_metrics.h"

namespace kiln::server {
namespace {

metrics::HistogramFamily& family() {
  static metrics::HistogramFamily& f = metrics::processRegistry().histogram(
      "kiln_db_transaction_duration_seconds",
      "Time database transactions stay open (begin to commit or rollback) in seconds.", {"mode"},
      metrics::defaultSecondsBuckets());
  return f;
}

}  // namespace

metrics::Histogram& dbTransactionHistogram(bool write) {
  // Resolved once: a transaction's cost is two clock reads and a few atomics.
  static metrics::Histogram& read = family().labels({"read"});
  static metrics::Histogram& written = family().labels({"write"});
  return write ? written : read;
}

void registerStorageMetrics() {
  (void)dbTransactionHistogram(false);
  (void)dbTransactionHistogram(true);
}

}  // namespace kiln::server
