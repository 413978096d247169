// A reference tool (a bpftrace script, `bpftrace -e`, or a BCC tool) run next to bpfql on the
// same workload: started while bpfql is attached, waited for until it prints the line that says
// it attached (a reference that attached late is the known flake of side-by-side tests), stopped
// with SIGINT after the workload, its stdout split into lines.
#pragma once

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tests/support/process.h"

namespace bpfql::test {

// A stuck process's kernel stack and state, of each of its threads (for a failure message).
inline std::string where_it_waits(pid_t pid) {
  std::string out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    auto slurp = [](const std::filesystem::path& p) {
      std::ifstream in(p);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    std::string status = slurp(task.path() / "status");
    auto state = status.find("State:");
    out += "thread " + task.path().filename().string() + " " +
           (state == std::string::npos ? "" : status.substr(state, status.find('\n', state) - state)) +
           " wchan " + slurp(task.path() / "wchan") + "\n" + slurp(task.path() / "stack");
  }
  return out;
}

class ReferenceTool {
 public:
  // `ready` is a text the tool prints on stdout once its probes are attached: bpftrace prints
  // "Attaching N probes..." before attaching, so for `-e` programs the caller names a text its
  // BEGIN block prints (BEGIN runs after the probes are attached).
  void start(const std::vector<std::string>& argv, const std::string& ready,
             const SpawnOptions& options = {}) {
    process_.emplace(Process::spawn(argv, options));
    started_ = process_->wait_for_stdout(ready, milliseconds(90000));
    // bpftrace's and BCC's own start opens many files and forks: let bpfql and the tool drain
    // those events before the workload runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  std::vector<std::string> stop() {
    REQUIRE_MESSAGE(started_, "the reference tool did not start:\n" << process_->err());
    process_->signal(SIGINT);
    // BCC's Python tools detach each probe on exit, slowly on a loaded machine; any tool's detach
    // also waits behind the kernel's freeing of earlier tests' perf events (event_mutex).
    auto status = process_->wait(milliseconds(60000));
    std::string stuck;
    if (!status) {
      // Twice in full runs on a busy machine bpftrace had not exited 120 s after its SIGINT:
      // say where it waits, and ask once more.
      stuck = where_it_waits(process_->pid());
      MESSAGE("the reference tool had not stopped 60 s after SIGINT; it waited in:\n" << stuck);
      process_->signal(SIGINT);
      status = process_->wait(milliseconds(60000));
    }
    REQUIRE_MESSAGE(status.has_value(), "the reference tool did not stop; it waited in:\n"
                                            << (stuck.empty() ? where_it_waits(process_->pid()) : stuck));
    std::vector<std::string> lines;
    std::istringstream in(process_->out());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // Reads what the tool prints for up to `timeout` (into out()), for callers that wait on it.
  void pump(milliseconds timeout) {
    if (process_) process_->wait_for_stdout("\x01", timeout);
  }

  std::string out() const { return process_ ? process_->out() : ""; }
  std::string err() const { return process_ ? process_->err() : ""; }
  // bpftrace says "Lost N events" when its perf buffer overflowed (a tool that traces every
  // process, on a busy machine).
  bool lost_events() const {
    return process_ && (process_->out().find("Lost ") != std::string::npos ||
                        process_->err().find("Lost ") != std::string::npos);
  }

 private:
  std::optional<Process> process_;
  bool started_ = false;
};

// Lines (a tool's output, a set of events) as one text, one a line, for INFO messages.
template <typename Lines>
std::string lines_text(const Lines& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

inline std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

inline const char* bpftrace_binary() { return "/usr/bin/bpftrace"; }

// `bpftrace -e PROGRAM` where PROGRAM's BEGIN prints "ready".
inline std::vector<std::string> bpftrace_e(const std::string& program) {
  return {bpftrace_binary(), "-e", "BEGIN { printf(\"ready\\n\"); } " + program};
}

}  // namespace bpfql::test
