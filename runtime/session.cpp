// run_plan: load, attach, print on schedule, stream events, and on a signal or stop_after print
// the final result and detach (see session.h). Everything runs on this one thread: libbcc's BPF
// objects are not thread-safe.
#include "runtime/session.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <unordered_map>

#include "runtime/load/attach.h"
#include "runtime/collect/collector.h"
#include "runtime/load/detach.h"
#include "runtime/collect/display.h"
#include "runtime/load/loader.h"
#include "runtime/collect/map_reader.h"
#include "runtime/privileges.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/schedule.h"
#include "runtime/collect/export_rows.h"
#include "runtime/signals.h"
#include "runtime/collect/stacks.h"
#include "runtime/collect/stream.h"

namespace bpfql {
namespace {

void say(const std::string& message) { std::cerr << "bpfql: " << message << "\n" << std::flush; }

// The one place display functions are applied (display.h, owned by the display module).
Cell shown(Display d, const Cell& raw, int pid, std::span<const std::string> probes) {
  return apply_display(d, raw, pid, probes);
}

// Everything a run holds once the program is loaded.
class Run {
 public:
  Run(const Plan& plan, const RunOptions& options, std::ostream& os, Output& output,
      std::unique_ptr<BpfObject> bpf)
      : plan_(plan),
        options_(options),
        os_(os),
        output_(output),
        bpf_(std::move(bpf)),
        stacks_(*bpf_),
        streams_(output, [this](const PlanQuery& q) { return hooks(q); }),
        schedule_(plan, SteadyClock::now()) {}

  // Returns the exit status.
  int start_and_loop(SignalFd& signals);

 private:
  DecodeHooks hooks(const PlanQuery& q) {
    return DecodeHooks{stacks_.for_query(q), &shown, &symbolize_frames};
  }
  bool setup();
  void loop(SignalFd& signals);
  void print(Schedule::Entry& e, SteadyClock::time_point now, bool regular);
  void end_window(Schedule::Entry& e, SteadyClock::time_point now);
  void finish();
  void report_lost(bool at_exit);
  void drop_privileges();
  void flush_output();
  bool output_ok() const { return write_errno_ == 0; }
  bool report_write_error() const;

  const Plan& plan_;
  const RunOptions& options_;
  std::ostream& os_;
  Output& output_;
  std::unique_ptr<BpfObject> bpf_;
  StackSymbolizers stacks_;
  EventStreams streams_;
  MapReader maps_;
  Attachments probes_;
  ProcessWatch traced_;  // the processes uprobes/USDT are limited to
  Schedule schedule_;
  std::unordered_map<const PlanQuery*, DecodeHooks> hooks_;
  SteadyClock::time_point last_lost_report_{};
  std::unordered_map<const PlanQuery*, uint64_t> lost_reported_;
  bool stopping_ = false;  // finish() has begun: the prints now are the last ones
  int write_errno_ = 0;    // why writing the output failed (ENOSPC, EPIPE, ...); 0 = it did not
};

bool Run::setup() {
  if (auto e = maps_.open(*bpf_, plan_); !e.empty()) {
    say("internal error: " + e);
    return false;
  }
  for (const auto& q : plan_.queries)
    if (!q.streaming) hooks_[&q] = hooks(q);
  if (auto e = streams_.open(*bpf_, plan_); !e.empty()) {
    say(e);
    return false;
  }
  if (auto e = traced_.open(plan_); !e.empty()) {
    say(e);
    return false;
  }
  AttachResult attached = attach_all(*bpf_, plan_, probes_);
  if (options_.verbose && !attached.log.empty()) std::cerr << attached.log;
  if (options_.verbose && attached.raw_tracepoints > 0)
    std::cerr << "bpfql: " << attached.raw_tracepoints << " of " << attached.probes
              << " probes attached as raw tracepoints (their programs read no field of the "
                 "record, which the kernel then does not build)\n";
  if (!attached.error.empty()) {
    say(attached.error);
    return false;
  }
  if (options_.drop_privileges) drop_privileges();
  output_.started();
  std::cerr << "Tracing " << attached.probes << (attached.probes == 1 ? " probe" : " probes")
            << "... Hit Ctrl-C to end.\n"
            << std::flush;
  return true;
}

int Run::start_and_loop(SignalFd& signals) {
  bool ok = setup();
  if (ok) {
    schedule_ = Schedule(plan_, SteadyClock::now());  // intervals count from attach
    loop(signals);
    finish();
    if (report_write_error()) ok = false;
  }
  detach_all(std::move(bpf_), probes_, /*background=*/true);
  return ok ? 0 : 1;
}

// Flushes and, once the stream has failed, keeps the write's errno: a full disk (or /dev/full)
// otherwise looks like a run that printed nothing.
void Run::flush_output() {
  output_.flush();
  if (os_.fail() && write_errno_ == 0) write_errno_ = errno != 0 ? errno : EIO;
}

// Says why the output could not be written; true when that makes the run a failure. A closed
// pipe is the reader's choice (`bpfql run q.yml | head`), so it ends the run quietly.
bool Run::report_write_error() const {
  if (write_errno_ == 0 || write_errno_ == EPIPE) return false;
  const std::string& path = options_.output_path;
  say(fmt::format("cannot write the output to {}: {}", path.empty() ? "the standard output" : path,
                  std::strerror(write_errno_)));
  return true;
}

// Everything is attached: from here on bpfql only reads fds it holds (see privileges.h).
void Run::drop_privileges() {
  PrivilegeDrop dropped = drop_privileges_after_attach(plan_);
  if (!dropped.error.empty()) say("warning: could not drop all privileges after attach: " + dropped.error);
  if (!options_.verbose) return;
  std::string kept;
  for (int cap : dropped.kept) kept += (kept.empty() ? "" : ", ") + capability_name(cap);
  say("attached; dropped privileges (no_new_privs), capabilities kept: " +
      (kept.empty() ? std::string("none") : kept));
}

void Run::print(Schedule::Entry& e, SteadyClock::time_point now, bool regular) {
  IntervalResult r;
  r.query = e.query;
  r.time = std::chrono::system_clock::now();
  r.interval_s = schedule_.covered_seconds(e, now, regular);
  QuerySnapshot snapshot = maps_.read(*e.query, /*last=*/stopping_);
  r.dropped = snapshot.dropped;
  r.rows = options_.export_rows ? build_export_rows(*e.query, snapshot, hooks_[e.query])
                                : build_rows(*e.query, snapshot, hooks_[e.query]);
  sort_and_limit(*e.query, r.rows);
  output_.interval(r);
  flush_output();
  if (!stopping_) stacks_.release(*e.query, snapshot);
  e.last_print = now;
}

// A limited stream's window ends: the events still in the perf buffers happened in it.
void Run::end_window(Schedule::Entry& e, SteadyClock::time_point now) {
  streams_.drain();
  streams_.end_window(*e.query);
  flush_output();
  e.last_print = now;
}

void Run::report_lost(bool at_exit) {
  auto now = SteadyClock::now();
  if (!at_exit && now - last_lost_report_ < std::chrono::seconds(1)) return;
  last_lost_report_ = now;
  for (const auto& q : plan_.queries) {
    if (!q.streaming) continue;
    // The program's own counter is exact and current; the kernel's lost records (which
    // streams_ counts) are written only before the next event that fits, so after the last
    // burst they never come. They remain the fallback for a Plan without the counter.
    uint64_t total = maps_.read_lost(q).value_or(streams_.lost(&q));
    uint64_t& reported = lost_reported_[&q];
    if (total <= reported) continue;
    say(fmt::format("query {}: lost {} events (the perf buffer was full)", q.name, total - reported));
    reported = total;
  }
}

void Run::loop(SignalFd& signals) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  auto watch = [&](int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  };
  watch(signals.fd());
  for (int fd : streams_.fds()) watch(fd);
  for (int fd : traced_.fds()) watch(fd);

  epoll_event events[64];
  for (bool stop = false; !stop;) {
    auto now = SteadyClock::now();
    if (schedule_.should_stop(now)) break;
    for (auto* e : schedule_.take_due(now)) {
      if (e->query->streaming)
        end_window(*e, now);
      else
        print(*e, now, /*regular=*/true);
    }
    if (!output_ok()) break;  // the reader of our output went away

    int n = epoll_wait(ep, events, 64, Schedule::timeout_ms(schedule_.next_wakeup(), now));
    if (n < 0 && errno != EINTR) {
      say(fmt::format("epoll_wait: {}", std::strerror(errno)));
      break;
    }
    uint64_t delivered = 0;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == signals.fd()) {
        stop = signals.take() != 0 || stop;
      } else if (traced_.watches(fd)) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);  // a pidfd stays readable once it exited
        say(traced_.take_exit(fd));
      } else {
        delivered += streams_.read_ready(fd);
      }
    }
    if (delivered) {
      flush_output();
      if (!output_ok()) break;
    }
    report_lost(false);
  }
  close(ep);
}

void Run::finish() {
  stopping_ = true;
  if (output_ok() && streams_.drain()) flush_output();
  auto now = SteadyClock::now();
  for (auto& e : schedule_.entries()) {
    if (!output_ok()) break;
    if (e.query->streaming)
      end_window(e, now);  // events may have come since a tick just now
    else if (!schedule_.just_printed(e, now))
      print(e, now, /*regular=*/false);
  }
  report_lost(true);
  // Spans begun and never ended (memleak's outstanding allocations, a request still in flight).
  for (const auto& q : plan_.queries)
    if (!q.open_span_map.empty())
      if (auto open = maps_.count_entries(q.open_span_map); open && *open > 0)
        say(fmt::format("query {}: {} span{} still open at exit (begun, never ended)", q.name,
                        *open, *open == 1 ? "" : "s"));
  // A streaming query has no interval print to carry its dropped count (span begins that did
  // not fit their map): say it here.
  for (const auto& q : plan_.queries)
    if (q.streaming)
      if (uint64_t dropped = maps_.read_dropped(q))
        say(fmt::format("query {}: dropped {} entries (a map was full; raise max_entries)", q.name,
                        dropped));
}

}  // namespace

int run_plan(const Plan& plan, const RunOptions& options) {
  SignalFd signals;  // first: a Ctrl-C during the load queues up instead of killing us mid-way
  if (auto problem = check_host(plan)) {
    say(*problem);
    return 1;
  }
  std::ofstream file;
  if (!options.output_path.empty()) {
    file.open(options.output_path, std::ios::out | std::ios::trunc);
    if (!file) {
      say(fmt::format("cannot write {}: {}", options.output_path, std::strerror(errno)));
      return 1;
    }
  }
  std::ostream& os = options.output_path.empty() ? std::cout : file;
  std::unique_ptr<Output> made;
  if (!options.output) made = make_output(options.format, os);
  Output& output = options.output ? *options.output : *made;

  LoadResult loaded = load_program(plan, options.verbose, options.use_cache);
  if (options.verbose && !loaded.log.empty()) std::cerr << loaded.log;
  if (!loaded.bpf) {
    say(loaded.error);
    return 1;
  }
  Run run(plan, options, os, output, std::move(loaded.bpf));
  return run.start_and_loop(signals);
}

}  // namespace bpfql
