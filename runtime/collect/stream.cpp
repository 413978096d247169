// Perf buffers of streaming queries (see stream.h).
#include "runtime/collect/stream.h"

#include <bcc/libbpf.h>
#include <bcc/perf_reader.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "runtime/load/attach.h"

namespace bpfql {

EventStreams::EventStreams(Output& output, std::function<DecodeHooks(const PlanQuery&)> hooks_for)
    : output_(output), hooks_for_(std::move(hooks_for)) {}

EventStreams::~EventStreams() {
  for (perf_reader* r : readers_) perf_reader_free(r);
}

void EventStreams::on_event(void* cookie, void* data, int size) {
  auto* s = static_cast<Stream*>(cookie);
  if (size <= 0) return;
  if (s->query->limit != 0 && s->printed_in_window >= s->query->limit) {
    ++s->not_printed;  // not even decoded
    return;
  }
  ++s->printed_in_window;
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), static_cast<size_t>(size));
  s->owner->output_.event(decode_event(*s->query, bytes, s->hooks));
  ++s->delivered;
}

void EventStreams::on_lost(void* cookie, uint64_t count) {
  static_cast<Stream*>(cookie)->lost += count;
}

std::string EventStreams::open(const BpfObject& bpf, const Plan& plan, int page_cnt) {
  for (const auto& q : plan.queries) {
    if (!q.streaming) continue;
    int table_fd = bpf.map_fd(q.event_buffer);
    if (table_fd < 0)
      return fmt::format("query {}: perf buffer {} is not in the program", q.name, q.event_buffer);
    streams_.push_back(std::make_unique<Stream>(Stream{this, &q, hooks_for_(q)}));
    Stream* s = streams_.back().get();
    for (int cpu : online_cpus()) {
      auto* reader = static_cast<perf_reader*>(
          bpf_open_perf_buffer(&on_event, &on_lost, s, -1, cpu, page_cnt));
      if (!reader)
        return fmt::format("query {}: cannot open a perf buffer on CPU {}: {}", q.name, cpu,
                           std::strerror(errno));
      readers_.push_back(reader);
      int fd = perf_reader_fd(reader);
      if (bpf_update_elem(table_fd, &cpu, &fd, BPF_ANY) != 0)
        return fmt::format("query {}: cannot install the perf buffer for CPU {}: {}", q.name, cpu,
                           std::strerror(errno));
      by_fd_[fd] = {reader, s};
    }
  }
  return "";
}

std::vector<int> EventStreams::fds() const {
  std::vector<int> out;
  for (const auto& [fd, r] : by_fd_) out.push_back(fd);
  return out;
}

uint64_t EventStreams::read_ready(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return 0;
  uint64_t before = it->second.second->delivered;
  perf_reader_event_read(it->second.first);
  return it->second.second->delivered - before;
}

uint64_t EventStreams::drain() {
  uint64_t n = 0;
  for (const auto& [fd, r] : by_fd_) n += read_ready(fd);
  return n;
}

void EventStreams::end_window(const PlanQuery& query) {
  for (auto& s : streams_) {
    if (s->query != &query) continue;
    output_.window_ended(query);
    if (s->not_printed != 0) output_.events_not_printed(query, s->not_printed);
    s->printed_in_window = 0;
    s->not_printed = 0;
  }
}

std::vector<EventStreams::Lost> EventStreams::take_new_lost() {
  std::vector<Lost> out;
  for (auto& s : streams_) {
    if (s->lost == s->lost_reported) continue;
    out.push_back({s->query, s->lost - s->lost_reported});
    s->lost_reported = s->lost;
  }
  return out;
}

uint64_t EventStreams::lost(const PlanQuery* query) const {
  for (const auto& s : streams_)
    if (s->query == query) return s->lost;
  return 0;
}

}  // namespace bpfql
