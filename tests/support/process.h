// Child processes for end-to-end tests: spawn with piped stdin/stdout/stderr, wait for a line on
// stderr, signal, and wait — every wait with a deadline, so a stuck bpfql fails a test instead of
// hanging it. A Process that goes out of scope while its child still runs kills it (SIGKILL) and
// reaps it; children also get SIGKILL if the test binary dies (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfql::test {

using std::chrono::milliseconds;

// How a child ended: exited with `code`, or was killed by `signal` (code is then -1).
struct ExitStatus {
  int code = -1;
  int signal = 0;

  bool exited_with(int expected) const { return signal == 0 && code == expected; }
  std::string describe() const;  // "exit 0", "killed by signal 9"
};

struct SpawnOptions {
  std::map<std::string, std::string> env;  // added to (or replacing in) the test's environment
  std::string cwd;                         // "" = the test's working directory
};

class Process {
 public:
  // Starts argv[0] (a path; no PATH lookup) with argv. Throws std::runtime_error when the pipes
  // or the fork fail, or when the program cannot be executed (the exec error is reported back).
  static Process spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  bool running();

  // Reads stdout and stderr until stderr holds a line containing `needle` (true), the child
  // exits (false) or the timeout passes (false).
  bool wait_for_stderr(std::string_view needle, milliseconds timeout);
  // The same for stdout.
  bool wait_for_stdout(std::string_view needle, milliseconds timeout);

  // Writes all of `text` to the child's stdin (false if the child closed it).
  bool write_stdin(std::string_view text);
  void close_stdin();

  // Sends `sig` if the child has not been reaped yet.
  void signal(int sig);

  // Reads the pipes until the child exits and its pipes are drained; nullopt on timeout (the
  // child is left running: kill() it, or let the destructor do it).
  std::optional<ExitStatus> wait(milliseconds timeout);

  // SIGKILL and reap (no-op when already reaped).
  void kill();

  // Everything read so far.
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  Process() = default;
  // One poll() round over the open pipes, for at most `budget`. Returns false when nothing is
  // left to read (both pipes at EOF).
  bool pump(milliseconds budget);
  bool wait_for(const std::string& stream, std::string_view needle, milliseconds timeout);
  void reap_if_exited();
  void close_fds();

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::optional<ExitStatus> status_;
  std::string out_;
  std::string err_;
};

// Runs a program to completion with `input` on stdin, within `timeout` (then it is killed and
// the status says signal 9). For short commands such as `bpfql check` and `bpftool prog list`.
struct Completed {
  ExitStatus status;
  std::string out;
  std::string err;
  bool timed_out = false;
};
Completed run_to_completion(const std::vector<std::string>& argv, milliseconds timeout,
                            std::string_view input = {}, const SpawnOptions& options = {});

// Lines of `text` (without the newlines; a last line without newline counts).
std::vector<std::string> split_lines(std::string_view text);

}  // namespace bpfql::test
