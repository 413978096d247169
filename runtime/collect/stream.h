// Streaming queries: their perf buffers, opened on every online CPU. The session polls the
// readers' fds in its own epoll set (next to the signal fd), so one wait covers both; each event
// is decoded and handed to Output::event as soon as it is read, up to the query's `limit` per
// window (the session ends windows); events past it are only counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/plan.h"
#include "runtime/load/bpf_object.h"
#include "runtime/collect/decode.h"
#include "runtime/collect/output.h"

struct perf_reader;

namespace bpfql {

class EventStreams {
 public:
  // hooks_for gives each streaming query its decode hooks (stacks come from the query's map).
  EventStreams(Output& output, std::function<DecodeHooks(const PlanQuery&)> hooks_for);
  ~EventStreams();
  EventStreams(const EventStreams&) = delete;
  EventStreams& operator=(const EventStreams&) = delete;

  // Opens the perf buffer of every streaming query (page_cnt pages per CPU, a power of two).
  // Returns "" or the reason it could not.
  std::string open(const BpfObject& bpf, const Plan& plan, int page_cnt = 64);

  std::vector<int> fds() const;
  // Reads what is ready on one reader fd (from the poll set); returns events delivered.
  uint64_t read_ready(int fd);
  // Reads every buffer to the end (at exit, and before a window ends).
  uint64_t drain();

  // Ends the current `limit` window of `query`'s stream (its interval, or the whole run): says
  // how many events the limit held back in it, and lets the next `limit` events print.
  void end_window(const PlanQuery& query);

  // Events the kernel dropped because a buffer was full: new since the last call, per query.
  struct Lost {
    const PlanQuery* query;
    uint64_t count;
  };
  std::vector<Lost> take_new_lost();
  uint64_t lost(const PlanQuery* query) const;

 private:
  struct Stream {
    EventStreams* owner;
    const PlanQuery* query;
    DecodeHooks hooks;
    uint64_t lost = 0;
    uint64_t lost_reported = 0;
    uint64_t delivered = 0;
    uint64_t printed_in_window = 0;  // against the query's `limit`
    uint64_t not_printed = 0;        // in this window, past the limit
  };
  static void on_event(void* cookie, void* data, int size);
  static void on_lost(void* cookie, uint64_t count);

  Output& output_;
  std::function<DecodeHooks(const PlanQuery&)> hooks_for_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<perf_reader*> readers_;
  std::unordered_map<int, std::pair<perf_reader*, Stream*>> by_fd_;
};

}  // namespace bpfql
