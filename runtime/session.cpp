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
#include "runtime/collect/idle_keys.h"
#include "runtime/collect/map_reader.h"
#include "runtime/load/attach.h"
#include "runtime/load/carry_state.h"
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
// A perf buffer's wakeup may wait for the CPU it fired on to take an interrupt: an idle CPU can
// sleep until its next timer, seconds away (a uprobe event of a process that then sleeps came
// 3 s late, after the process was gone, so its stack could no longer be symbolized). Streams
// are therefore also read at least this often, woken or not.
constexpr std::chrono::milliseconds kStreamPoll{100};

void say(const std::string& message) { std::cerr << "bpfql: " << message << "\n" << std::flush; }

// The one place display functions are applied (display.h, owned by the display module).
Cell shown(Display d, const Cell& raw, int pid, std::span<const std::string> probes) {
  return apply_display(d, raw, pid, probes);
}

// Everything a run holds once the program is loaded.
class Run {
 public:
  Run(const Plan& plan, const RunOptions& options, std::ostream& os, Output& output,
      std::unique_ptr<BpfObject> bpf, std::unique_ptr<Plan> owned_plan = nullptr)
      : owned_plan_(std::move(owned_plan)),
        plan_(plan),
        options_(options),
        os_(os),
        output_(output),
        bpf_(std::move(bpf)),
        stacks_(*bpf_),
        streams_(output, [this](const PlanQuery& q) { return hooks(q); }),
        schedule_(plan, SteadyClock::now()) {
    if (options.expire_after.count() > 0) idle_.emplace(options.expire_after);
  }

  // Returns the exit status. `attached`: setup() already ran (a Run that a reload started).
  // When a reload hands over, handover() holds the new Run, already attached.
  int start_and_loop(SignalFd& signals, bool attached = false);
  std::unique_ptr<Run> handover() { return std::move(next_); }

 private:
  DecodeHooks hooks(const PlanQuery& q) {
    return DecodeHooks{stacks_.for_query(q), &shown, &symbolize_frames};
  }
  bool setup();
  bool attach();
  void announce(int probes);
  void reload();
  bool loop(SignalFd& signals);
  void print(Schedule::Entry& e, SteadyClock::time_point now, bool regular, bool unless_repeat = false);
  void end_window(Schedule::Entry& e, SteadyClock::time_point now);
  void finish();
  void report_lost(bool at_exit);
  void drop_privileges();
  void add_program_stats(const PlanQuery& q, IntervalResult& r) const;
  void flush_output();
  bool output_ok() const { return write_errno_ == 0; }
  bool report_write_error() const;

  std::unique_ptr<Plan> owned_plan_;  // a reloaded Plan (the first one is the caller's)
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
  int probes_attached_ = 0;
  std::unique_ptr<Run> next_;  // a reload's Run, attached, that takes over from this one
  std::optional<IdleKeys> idle_;  // serve --expire-after
};

bool Run::setup() {
  if (!attach()) return false;
  announce(probes_attached_);
  return true;
}

// Opens the maps and streams and attaches every probe; false (after saying why) on failure.
bool Run::attach() {
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
                 "record, or on raw_syscalls read the call's number, result and registers; the "
                 "kernel then does not build the record)\n";
  if (!attached.error.empty()) {
    say(attached.error);
    interrupted_ = stop_signal_pending();  // attach_all stopped for it
    return false;
  }
  probes_attached_ = attached.probes;
  return true;
}

void Run::announce(int probes) {
  if (options_.drop_privileges) drop_privileges();
  output_.started();
  if (options_.command) options_.command->release();  // everything is attached: let it run
  std::cerr << "Tracing " << probes << (probes == 1 ? " probe" : " probes")
            << "... Hit Ctrl-C to end.\n"
            << std::flush;
}

// SIGHUP in serve (session.h, Reloader): the new Plan is compiled, loaded and attached while this
// one keeps running; the unchanged queries' state is copied into the new maps just before the
// new probes attach (events between the copy and the attach count in neither: a few at most,
// never twice). On success next_ holds the new Run and the loop ends; this Run then detaches.
void Run::reload() {
  Reloader& reloader = *options_.reloader;
  std::unique_ptr<Plan> next = reloader.next_plan();
  if (!next) {
    reloader.reload_failed("the new queries do not check (errors above)");
    return;
  }
  if (auto problem = check_host(*next)) {
    reloader.reload_failed(*problem);
    return;
  }
  LoadResult loaded = load_program(*next, options_.verbose, options_.use_cache);
  if (options_.verbose && !loaded.log.empty()) std::cerr << loaded.log;
  if (!loaded.bpf) {
    reloader.reload_failed(loaded.error);
    return;
  }
  std::map<size_t, size_t> unchanged = reloader.unchanged(plan_, *next);
  std::vector<std::string> kept;
  for (auto [to, from] : unchanged) {
    const PlanQuery& old_q = plan_.queries[from];
    if (std::string why = carry_query_state(old_q, *bpf_, next->queries[to], *loaded.bpf); !why.empty()) {
      say(fmt::format("reload: query {} starts again from zero: {}", old_q.name, why));
      continue;
    }
    kept.push_back(old_q.name);
  }
  const Plan& next_plan = *next;
  auto run = std::make_unique<Run>(next_plan, options_, os_, output_, std::move(loaded.bpf), std::move(next));
  if (!run->attach()) {
    detach_all(std::move(run->bpf_), run->probes_, /*background=*/true);
    reloader.reload_failed("the new program did not attach (error above)");
    return;
  }
  if (idle_) run->idle_ = std::move(idle_);  // by query name: the kept queries' timers go on
  reloader.reloaded(next_plan, kept);
  run->announce(run->probes_attached_);
  next_ = std::move(run);
}

int Run::start_and_loop(SignalFd& signals, bool attached) {
  bool ok = attached || setup();
  if (ok) {
    schedule_ = Schedule(plan_, SteadyClock::now());  // intervals count from attach
    if (attached)  // a reload: every query is read at once, for the output to publish
      for (auto& e : schedule_.entries())
        if (!e.query->streaming) print(e, SteadyClock::now(), /*regular=*/false);
    ok = loop(signals);
    if (next_) {  // a reload took over: the new Run reads and prints from here
      detach_all(std::move(bpf_), probes_, /*background=*/true);
      return 0;
    }
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

// `unless_repeat`: print only if the read found something the last print did not show (a final
// print right after a regular one); what the read found is never dropped.
void Run::print(Schedule::Entry& e, SteadyClock::time_point now, bool regular, bool unless_repeat) {
  IntervalResult r;
  r.query = e.query;
  r.time = std::chrono::system_clock::now();
  r.interval_s = schedule_.covered_seconds(e, now, regular);
  auto read_start = SteadyClock::now();
  QuerySnapshot snapshot = maps_.read(*e.query, /*last=*/stopping_);
  if (e.query->cumulative) {
    size_t digest = snapshot_digest(snapshot);
    if (unless_repeat && digest == e.printed_digest) return;
    e.printed_digest = digest;
  } else if (unless_repeat && !holds_events(snapshot)) {
    return;
  }
  r.dropped = snapshot.dropped;
  if (idle_ && e.query->cumulative && !stopping_) {
    r.expired_now = idle_->expire(*e.query, snapshot, *bpf_, SteadyClock::now()) > 0;
    r.expired_keys = idle_->expired(*e.query);
  }
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
  const bool streaming = !streams_.fds().empty();
  auto next_stream_poll = SteadyClock::now() + kStreamPoll;
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
    if (streaming) wakeup = wakeup ? std::min(*wakeup, next_stream_poll) : next_stream_poll;
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
        SignalFd::Taken taken = signals.take_all();
        stop = taken.stop || stop;
        if (taken.reload && !stop && options_.reloader) {
          reload();
          if (next_) stop = true;
        }
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
    if (streaming && SteadyClock::now() >= next_stream_poll) {
      delivered += streams_.drain();
      next_stream_poll = SteadyClock::now() + kStreamPoll;
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
    else if (options_.final_read)
      print(e, now, /*regular=*/false, /*unless_repeat=*/schedule_.just_printed(e, now));
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
  auto run = std::make_unique<Run>(plan, options, os, output, std::move(loaded.bpf));
  int status = run->start_and_loop(signals);
  // serve's SIGHUP: each reload hands over to a new Run, already attached.
  while (auto next = run->handover()) {
    run = std::move(next);
    status = run->start_and_loop(signals, /*attached=*/true);
  }
  return status;
}

}  // namespace bpfql
