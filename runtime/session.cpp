// run_plan: load, attach, print on schedule, stream events, and on a signal or stop_after print
// the final result and detach (see session.h). Everything runs on this one thread: libbcc's BPF
// objects are not thread-safe.
#include "runtime/session.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <bpf/bpf.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <unordered_map>

#include "runtime/collect/collector.h"
#include "runtime/collect/display.h"
#include "runtime/collect/map_reader.h"
#include "runtime/load/attach.h"
#include "runtime/load/detach.h"
#include "runtime/load/loader.h"
#include "runtime/load/resource_limits.h"
#include "runtime/privileges.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/render/csv.h"
#include "runtime/render/format_cell.h"
#include "runtime/schedule.h"
#include "runtime/collect/export_rows.h"
#include "runtime/signals.h"
#include "runtime/collect/stacks.h"
#include "runtime/collect/stream.h"

namespace bpfql {
namespace {

// A signal came before tracing began: nothing was measured (the shell's 128 + SIGINT).
constexpr int kInterruptedStatus = 130;

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
  bool loop(SignalFd& signals);
  void print(Schedule::Entry& e, SteadyClock::time_point now, bool regular);
  void end_window(Schedule::Entry& e, SteadyClock::time_point now);
  void finish();
  void report_lost(bool at_exit);
  void drop_privileges();
  void add_program_stats(const PlanQuery& q, IntervalResult& r) const;
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
  bool interrupted_ = false;  // a signal came before tracing began
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
    interrupted_ = stop_signal_pending();  // attach_all stopped for it
    return false;
  }
  if (options_.drop_privileges) drop_privileges();
  output_.started();
  if (options_.command) options_.command->release();  // everything is attached: let it run
  std::cerr << "Tracing " << attached.probes << (attached.probes == 1 ? " probe" : " probes")
            << "... Hit Ctrl-C to end.\n"
            << std::flush;
  return true;
}

int Run::start_and_loop(SignalFd& signals) {
  bool ok = setup();
  if (ok) {
    schedule_ = Schedule(plan_, SteadyClock::now());  // intervals count from attach
    ok = loop(signals);
    finish();
    if (report_write_error()) ok = false;
  } else if (interrupted_) {
    detach_all(std::move(bpf_), probes_, /*background=*/true);
    return kInterruptedStatus;
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
  auto read_start = SteadyClock::now();
  QuerySnapshot snapshot = maps_.read(*e.query, /*last=*/stopping_);
  r.dropped = snapshot.dropped;
  // A flame graph takes every stack: `limit` is for people reading a table.
  const bool whole = options_.format == OutputFormat::Folded || options_.format == OutputFormat::Svg;
  PlanQuery unlimited;
  if (whole) {
    unlimited = *e.query;
    unlimited.limit = 0;
  }
  const PlanQuery& shape = whole ? unlimited : *e.query;
  r.rows = options_.export_rows ? build_export_rows(*e.query, snapshot, hooks_[e.query])
                                : build_rows(shape, snapshot, hooks_[e.query], r.interval_s);
  sort_and_limit(shape, r.rows);
  r.read_seconds = std::chrono::duration<double>(SteadyClock::now() - read_start).count();
  if (options_.export_rows) add_program_stats(*e.query, r);
  output_.interval(r);
  flush_output();
  if (!stopping_) stacks_.release(*e.query, snapshot);
  e.last_print = now;
}

// The kernel's run count and time of the query's programs (kernel.bpf_stats_enabled), for serve.
void Run::add_program_stats(const PlanQuery& q, IntervalResult& r) const {
  std::ifstream enabled("/proc/sys/kernel/bpf_stats_enabled");
  int on = 0;
  if (!(enabled >> on) || on == 0) return;
  std::set<std::string> seen;
  for (const auto& a : q.attaches) {
    if (!seen.insert(a.function).second) continue;
    int fd = bpf_->program_fd(a.function);
    if (fd < 0) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    r.program_stats = true;
    r.program_runs += info.run_cnt;
    r.program_run_ns += info.run_time_ns;
  }
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

// False when the loop could not run (then the run fails: without epoll it would end at once
// with a short result that looks complete).
bool Run::loop(SignalFd& signals) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    int err = errno;
    std::string problem = resource_problem(err, "cannot wait for events (epoll_create1)");
    say(problem.empty() ? fmt::format("cannot wait for events: epoll_create1: {}", std::strerror(err))
                        : problem);
    return false;
  }
  std::string watch_error;
  auto watch = [&](int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0 && watch_error.empty())
      watch_error = fmt::format("cannot wait for events: epoll_ctl: {}", std::strerror(errno));
  };
  if (signals.fd() < 0)
    watch_error = fmt::format("cannot wait for signals: signalfd: {}", std::strerror(signals.error()));
  else
    watch(signals.fd());
  for (int fd : streams_.fds()) watch(fd);
  for (int fd : traced_.fds()) watch(fd);
  if (options_.command) watch(options_.command->exit_fd());
  if (options_.refresh_fd >= 0) watch(options_.refresh_fd);
  if (!watch_error.empty()) {
    say(watch_error);
    close(ep);
    return false;
  }

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

    // Streamed rows a table holds back to size its columns are printed by their deadline.
    auto wakeup = schedule_.next_wakeup();
    if (auto held = output_.flush_deadline()) wakeup = wakeup ? std::min(*wakeup, *held) : *held;
    int n = epoll_wait(ep, events, 64, Schedule::timeout_ms(wakeup, now));
    if (n < 0 && errno != EINTR) {
      say(fmt::format("epoll_wait: {}", std::strerror(errno)));
      close(ep);
      return false;
    }
    uint64_t delivered = 0;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == signals.fd()) {
        stop = signals.take() != 0 || stop;
      } else if (options_.command && fd == options_.command->exit_fd()) {
        say(options_.command->exited());  // its own status is reported, not bpfql's exit status
        stop = true;
      } else if (fd == options_.refresh_fd) {
        uint64_t requests = 0;
        (void)!::read(fd, &requests, sizeof requests);
        auto at = SteadyClock::now();
        for (auto& e : schedule_.entries()) {
          if (stop_signal_pending()) break;  // a stop must not wait for every query's read
          if (!e.query->streaming) print(e, at, /*regular=*/false);
        }
      } else if (traced_.watches(fd)) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);  // a pidfd stays readable once it exited
        say(traced_.take_exit(fd));
        // Every traced process is gone: nothing can fire again; final print, exit 0 (as
        // bpftrace -p does).
        if (traced_.fds().empty()) stop = true;
      } else {
        delivered += streams_.read_ready(fd);
      }
    }
    auto held = output_.flush_deadline();
    if (delivered || (held && *held <= SteadyClock::now())) {
      flush_output();
      if (!output_ok()) break;
    }
    report_lost(false);
  }
  close(ep);
  return true;
}

void Run::finish() {
  stopping_ = true;
  if (output_ok() && streams_.drain()) flush_output();
  auto now = SteadyClock::now();
  for (auto& e : schedule_.entries()) {
    if (!output_ok()) break;
    if (e.query->streaming)
      end_window(e, now);  // events may have come since a tick just now
    else if (options_.final_read && !schedule_.just_printed(e, now))
      print(e, now, /*regular=*/false);
  }
  if (output_ok()) {
    output_.finished();
    flush_output();
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
        say(fmt::format("query {}: {}", q.name, dropped_note(dropped)));
}

// Opens -o FILE. A FIFO's open blocks until a reader comes, and SIGINT is blocked meanwhile (for
// the SignalFd): wait for the reader in 50 ms steps, watching for a signal. False with errno
// EINTR when a signal came first.
bool open_output(const std::string& path, std::ofstream& file) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
    for (;;) {
      int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        file.open(path, std::ios::out);  // a reader is there now: does not block
        close(fd);
        return static_cast<bool>(file);
      }
      if (errno != ENXIO) return false;  // ENXIO: no reader yet
      if (stop_signal_pending()) {
        errno = EINTR;
        return false;
      }
      usleep(50'000);
    }
  }
  file.open(path, std::ios::out | std::ios::trunc);
  return static_cast<bool>(file);
}

}  // namespace

int run_plan(const Plan& plan, const RunOptions& options) {
  SignalFd signals;  // first: a Ctrl-C during the load queues up instead of killing us mid-way
  raise_open_file_limit();  // hundreds of probes are hundreds of fds
  if (auto problem = check_host(plan)) {
    say(*problem);
    return 1;
  }
  std::ofstream file;
  // -f csv -o DIR/: one file per query (render/csv.h).
  std::error_code ec;
  const bool csv_directory = options.format == OutputFormat::Csv && !options.output_path.empty() &&
                             (options.output_path.back() == '/' ||
                              std::filesystem::is_directory(options.output_path, ec));
  if (csv_directory) {
    std::filesystem::create_directories(options.output_path, ec);
    if (ec) {
      say(fmt::format("cannot create {}: {}", options.output_path, ec.message()));
      return 1;
    }
  } else if (!options.output_path.empty() && !open_output(options.output_path, file)) {
    if (errno == EINTR) {
      say(fmt::format("interrupted while waiting for a reader of {}", options.output_path));
      return kInterruptedStatus;
    }
    say(fmt::format("cannot write {}: {}", options.output_path, std::strerror(errno)));
    return 1;
  }
  std::ostream& os = options.output_path.empty() || csv_directory ? std::cout : file;
  std::unique_ptr<Output> made;
  if (!options.output)
    made = csv_directory ? make_csv_directory_output(options.output_path, std::cerr)
                         : make_output(options.format, os, options.time);
  Output& output = options.output ? *options.output : *made;

  LoadResult loaded = load_program(plan, options.verbose, options.use_cache);
  if (options.verbose && !loaded.log.empty()) std::cerr << loaded.log;
  if (!loaded.bpf) {
    if (stop_signal_pending()) {
      say("interrupted before tracing began");
      return kInterruptedStatus;
    }
    say(loaded.error);
    return 1;
  }
  Run run(plan, options, os, output, std::move(loaded.bpf));
  return run.start_and_loop(signals);
}

}  // namespace bpfql
