// File: server/api/node_event_hub.h
//
// One per kiln-server: fans the node event journal's new events out to the open Server-Sent
// Events streams (GET /v1/nodes/{node}/events with Accept: text/event-stream), without any
// database polling per client:
//  - a local write transaction that appended events tells the hub when it commits
//    (Storage::setEventsListener); the hub's thread then reads the new events with ONE query
//    and hands each to the streams of its node;
//  - events other kiln-servers on the same database wrote are read by the same ONE query every
//    [events] poll_interval seconds, and only while at least one stream is open;
//  - every [events] keepalive_interval seconds a stream that wrote nothing gets ": keep-alive".
// A stream first catches up from the journal (the events after its start id), then follows;
// ids only increase on a stream, none is sent twice and none is skipped. Writes go through
// the stream's StreamSink, which never blocks: a client that stops reading is dropped by its
// sink once its bounded buffer is full, and then unsubscribed here.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/api/http.h"
#include "server/config.h"
#include "server/storage/storage.h"
#include "shared/core/log.h"

namespace kiln::server {

class NodeEventHub {
 public:
  NodeEventHub(Storage& storage, const Config& config);
  ~NodeEventHub();
  NodeEventHub(const NodeEventHub&) = delete;
  NodeEventHub& operator=(const NodeEventHub&) = delete;

  /// Listens to the storage's commits and starts the hub's thread.
  void start();
  /// Stops the thread and ends every stream. Idempotent.
  void stop();

  /// A stream of the node's events with an id larger than `afterId`, of `kinds` (empty = all).
  /// It subscribes when the endpoint starts it and unsubscribes when stopped.
  std::shared_ptr<ResponseStream> openStream(int64_t nodeId, std::string nodeUuid, int64_t afterId,
                                             std::vector<std::string> kinds);

  /// Streams subscribed now.
  size_t streams() const;
  /// Journal queries the hub's thread has made (tests: one per wake, not per stream).
  uint64_t queries() const;

  /// Told by the storage after a local transaction that appended events committed.
  void eventsCommitted();

  class Stream;  // the ResponseStream (node_event_hub.cpp)

 private:
  friend class Stream;
  void subscribe(const std::shared_ptr<Stream>& stream);
  void unsubscribe(const Stream* stream);
  void run();
  /// Reads the events after the cursor and hands them out; false on a database error.
  bool readAndFanOut();
  void keepAlive();

  Storage& storage_;
  const Config& config_;
  Logger log_{"events"};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Stream>> streams_;
  int64_t cursor_ = -1;  ///< the largest id fanned out; -1 = read the newest at the next need
  bool dirty_ = false;   ///< a local commit appended events since the last read
  bool stopping_ = false;
  bool started_ = false;
  uint64_t queries_ = 0;
  std::shared_ptr<void> listenerTarget_;  ///< what the storage's listener calls (start/stop)
  std::thread thread_;
};

}  // namespace kiln::server
