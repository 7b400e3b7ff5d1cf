#include "server/api/node_event_hub.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "server/api/node_event_view.h"
#include "server/storage/queries/node_events.h"

namespace kiln::server {
namespace {

using Steady = std::chrono::steady_clock;
using Mode = Storage::Mode;

/// Events read per query (the hub's and a stream's catch-up).
constexpr int kPage = 500;
/// The hub re-reads this many ids below its cursor: on PostgreSQL a transaction that took a
/// smaller id may commit after one with a larger id; streams drop what they already sent.
constexpr int64_t kLookback = 32;
/// At most one read per this long, however many commits tell the hub (they coalesce).
constexpr auto kMinReadGap = std::chrono::milliseconds(20);

const std::string kKeepAlive = ": keep-alive\n\n";

}  // namespace

/// One client's stream of one node's events.
class NodeEventHub::Stream final : public ResponseStream,
                                   public std::enable_shared_from_this<NodeEventHub::Stream> {
 public:
  Stream(NodeEventHub* hub, int64_t nodeId, std::string nodeUuid, int64_t afterId,
         std::vector<std::string> kinds)
      : hub_(hub),
        nodeId_(nodeId),
        nodeUuid_(std::move(nodeUuid)),
        kinds_(std::move(kinds)),
        lastId_(afterId) {}

  int64_t nodeId() const { return nodeId_; }

  void start(std::shared_ptr<StreamSink> sink) override {
    NodeEventHub* hub = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_ || !hub_) {
        if (sink) sink->close();
        return;
      }
      sink_ = std::move(sink);
      lastWrite_ = Steady::now();
      hub = hub_;
    }
    hub->subscribe(shared_from_this());
    catchUp(*hub);
  }

  void stop() override {
    NodeEventHub* hub = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
      sink_.reset();
      hub = std::exchange(hub_, nullptr);
    }
    if (hub) hub->unsubscribe(this);
  }

  /// The hub stops: close the connection, forget the hub.
  void end() {
    std::shared_ptr<StreamSink> sink;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
      hub_ = nullptr;
      sink = std::move(sink_);
    }
    if (sink) sink->close();
  }

  /// From the hub's thread: an event of any node. False once the stream is over.
  bool deliver(const NodeEvent& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_ || !sink_) return !stopped_;
    if (e.nodeId != nodeId_ || e.id <= lastId_) return true;
    if (!ready_) {
      missed_ = true;  // the catch-up reads it again
      return true;
    }
    return writeLocked(e);
  }

  /// From the hub's thread: a keep-alive comment when nothing was written for `idle`.
  bool keepAlive(Steady::time_point now, Steady::duration idle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_ || !sink_) return !stopped_;
    if (!ready_ || now - lastWrite_ < idle) return true;
    lastWrite_ = now;
    if (!sink_->write(kKeepAlive)) return dropLocked();
    return true;
  }

 private:
  /// Sends the journal's events after lastId_, then follows the hub; events the hub handed
  /// out meanwhile are read again (missed_), so none is skipped.
  void catchUp(NodeEventHub& hub) {
    while (true) {
      int64_t after = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopped_) return;
        after = lastId_;
        missed_ = false;
      }
      auto page = [&]() -> Result<std::vector<NodeEvent>> {
        auto tx = KILN_TRY(hub.storage_.begin(Mode::Read));
        return listNodeEvents(*tx, nodeId_, after, kinds_, kPage);
      }();
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      if (!page) {
        hub.log_.warning("an event stream could not read the journal; closing it",
                         {{"node", nodeUuid_}, {"error", page.error().message}});
        if (sink_) sink_->close();
        dropLocked();
        return;
      }
      for (const auto& e : *page) {
        if (e.id > lastId_ && !writeLocked(e)) return;
      }
      if (static_cast<int>(page->size()) == kPage || missed_) continue;
      ready_ = true;
      return;
    }
  }

  bool wanted(const NodeEvent& e) const {
    return kinds_.empty() || std::find(kinds_.begin(), kinds_.end(), e.kind) != kinds_.end();
  }

  bool writeLocked(const NodeEvent& e) {
    lastId_ = e.id;
    if (!wanted(e)) return true;
    lastWrite_ = Steady::now();
    if (!sink_->write(eventStreamFrame(e))) return dropLocked();
    return true;
  }

  /// The sink refused (the client is gone or too slow): the stream is over.
  bool dropLocked() {
    stopped_ = true;
    sink_.reset();
    hub_ = nullptr;  // the hub removes it after this pass
    return false;
  }

  std::mutex mutex_;
  NodeEventHub* hub_;
  const int64_t nodeId_;
  const std::string nodeUuid_;
  const std::vector<std::string> kinds_;
  std::shared_ptr<StreamSink> sink_;
  int64_t lastId_;       ///< the largest id sent or skipped (kinds) on this stream
  bool ready_ = false;   ///< caught up: the hub's events go out directly
  bool missed_ = false;  ///< the hub handed out an event while catching up
  bool stopped_ = false;
  Steady::time_point lastWrite_{};
};

NodeEventHub::NodeEventHub(Storage& storage, const Config& config)
    : storage_(storage), config_(config) {}

NodeEventHub::~NodeEventHub() { stop(); }

namespace {
/// What the storage's listener reaches: the hub while it runs, nothing after.
struct ListenerTarget {
  std::mutex mutex;
  NodeEventHub* hub = nullptr;
};
}  // namespace

void NodeEventHub::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_) return;
  started_ = true;
  auto target = std::make_shared<ListenerTarget>();
  target->hub = this;
  listenerTarget_ = target;
  storage_.setEventsListener([target] {
    std::lock_guard<std::mutex> l(target->mutex);
    if (target->hub) target->hub->eventsCommitted();
  });
  thread_ = std::thread([this] { run(); });
}

void NodeEventHub::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (auto target = std::static_pointer_cast<ListenerTarget>(listenerTarget_)) {
    std::lock_guard<std::mutex> l(target->mutex);
    target->hub = nullptr;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams.swap(streams_);
  }
  for (const auto& s : streams) s->end();
}

std::shared_ptr<ResponseStream> NodeEventHub::openStream(int64_t nodeId, std::string nodeUuid,
                                                         int64_t afterId,
                                                         std::vector<std::string> kinds) {
  return std::make_shared<Stream>(this, nodeId, std::move(nodeUuid), afterId, std::move(kinds));
}

size_t NodeEventHub::streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return streams_.size();
}

uint64_t NodeEventHub::queries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queries_;
}

void NodeEventHub::eventsCommitted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (streams_.empty()) return;
    dirty_ = true;
  }
  wake_.notify_one();
}

void NodeEventHub::subscribe(const std::shared_ptr<Stream>& stream) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (cursor_ < 0) {
    // The first stream since the hub went quiet: the hub follows from the newest event (the
    // stream's own catch-up, which reads after this, covers everything up to it).
    auto newest = [&]() -> Result<int64_t> {
      auto tx = KILN_TRY(storage_.begin(Mode::Read));
      return newestNodeEventId(*tx);
    }();
    ++queries_;
    cursor_ = newest ? *newest : 0;
  }
  streams_.push_back(stream);
  lock.unlock();
  wake_.notify_one();
}

void NodeEventHub::unsubscribe(const Stream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(streams_, [&](const std::shared_ptr<Stream>& s) { return s.get() == stream; });
}

void NodeEventHub::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto poll = std::chrono::seconds(std::max(1, config_.eventsPollInterval));
  const auto keepalive =
      std::chrono::milliseconds(1000 * std::max(1, config_.eventsKeepaliveInterval));
  auto nextPoll = Steady::now() + poll;
  auto nextKeepAlive = Steady::now() + keepalive / 2;
  auto lastRead = Steady::now() - kMinReadGap;
  while (!stopping_) {
    if (streams_.empty()) {
      // Nothing to serve: no reads at all until a stream subscribes (which sets the cursor).
      dirty_ = false;
      cursor_ = -1;
      wake_.wait(lock, [&] { return stopping_ || !streams_.empty(); });
      nextPoll = Steady::now() + poll;
      continue;
    }
    const auto now = Steady::now();
    const auto readAt = dirty_ ? std::max(lastRead + kMinReadGap, now) : nextPoll;
    const auto due = std::min(readAt, nextKeepAlive);
    if (now < due) {
      wake_.wait_until(lock, due);
      continue;
    }
    const bool read = now >= readAt;
    const bool ping = now >= nextKeepAlive;
    if (read) dirty_ = false;
    lock.unlock();
    if (read) (void)readAndFanOut();
    if (ping) keepAlive();
    lock.lock();
    if (read) {
      lastRead = Steady::now();
      nextPoll = lastRead + poll;
    }
    if (ping) nextKeepAlive = now + keepalive / 2;
  }
}

bool NodeEventHub::readAndFanOut() {
  int64_t cursor = 0;
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cursor_ < 0) return true;  // no stream subscribed since the hub went quiet
    cursor = cursor_;
    streams = streams_;
  }
  std::vector<const Stream*> dead;
  while (true) {
    auto page = [&]() -> Result<std::vector<NodeEvent>> {
      auto tx = KILN_TRY(storage_.begin(Mode::Read));
      return listAllNodeEvents(*tx, std::max<int64_t>(0, cursor - kLookback), kPage);
    }();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++queries_;
    }
    if (!page) {
      log_.warning("reading new node events failed", {{"error", page.error().message}});
      return false;
    }
    for (const auto& e : *page) {
      for (const auto& s : streams) {
        if (e.nodeId == s->nodeId() && !s->deliver(e)) dead.push_back(s.get());
      }
      cursor = std::max(cursor, e.id);
    }
    if (static_cast<int>(page->size()) < kPage) break;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (cursor_ >= 0) cursor_ = std::max(cursor_, cursor);
  if (!dead.empty()) {
    std::erase_if(streams_, [&](const std::shared_ptr<Stream>& s) {
      return std::find(dead.begin(), dead.end(), s.get()) != dead.end();
    });
  }
  return true;
}

void NodeEventHub::keepAlive() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams = streams_;
  }
  const auto now = Steady::now();
  // Checked every half interval: a stream idle for half of it gets one, so no stream goes a
  // whole interval without a byte.
  const auto idle = std::chrono::milliseconds(500 * std::max(1, config_.eventsKeepaliveInterval));
  std::vector<const Stream*> dead;
  for (const auto& s : streams) {
    if (!s->keepAlive(now, idle)) dead.push_back(s.get());
  }
  if (dead.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(streams_, [&](const std::shared_ptr<Stream>& s) {
    return std::find(dead.begin(), dead.end(), s.get()) != dead.end();
  });
}

}  // namespace kiln::server
