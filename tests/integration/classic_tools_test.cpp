// The classic tools of the library (issue 11), each side by side with its reference on the same
// workload at the same time: bpftrace 0.17's own script where it runs on this kernel, BCC's tool,
// or a bpftrace program on the same tracepoint/uprobe where the reference needs a kprobe. Both
// answers are compared for the workload's pid: exact counts where the workload fixes them,
// histogram buckets where it is a size, calls per function for ssllatency.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

// A TCP socket on 127.0.0.1 on a port the kernel picks: listening (connects complete without
// accept(), up to the backlog) or only bound (connects to it are refused, and no one else can
// take the port meanwhile).
class LoopbackPort {
 public:
  explicit LoopbackPort(bool listening) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE_MESSAGE(fd_ >= 0, "socket: " << std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    if (listening) REQUIRE(::listen(fd_, 16) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackPort() { ::close(fd_); }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST_CASE("pidpersec side by side with pidpersec.bt's probe: the workload's forks") {
  BPFQL_REQUIRE_ROOT();
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/pidpersec")},
                        .workload = {"fork", "20"},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // pidpersec.bt counts every fork of the machine; the same probe and
                          // count, on the workload only.
                          bt.start(bpftrace_e("tracepoint:sched:sched_process_fork /pid == " +
                                              std::to_string(pid) + "/ { @forks = count(); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  int64_t forks = 0;
  for (const json& print : intervals_of(run, "pidpersec"))
    for (const json& row : print["rows"]) forks += as_int(row["forks"]);
  CHECK(forks == 20);
  CHECK(lines_text(reference).find("@forks: 20\n") != std::string::npos);
}

TEST_CASE("naptime side by side with naptime.bt: the sleeper, its parent and the time asked") {
  BPFQL_REQUIRE_ROOT();
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/naptime")},
                        .workload = {"nanosleep", "30", "1100"},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/naptime.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "naptime.bt:\n" << lines_text(reference));
  // Both as "PPID PCOMM PID COMM SECONDS".
  std::vector<std::string> ours, theirs;
  for (const json& e : events_of_pid(run, "naptime")) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%lld.%03lld", static_cast<long long>(as_int(e["sec"])),
                  static_cast<long long>(as_int(e["ms"])));
    ours.push_back(std::to_string(as_int(e["ppid"])) + " " + e["pcomm"].get<std::string>() + " " +
                   std::to_string(as_int(e["pid"])) + " " + e["comm"].get<std::string>() + " " + seconds);
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);  // TIME PPID PCOMM PID COMM SECONDS
    if (w.size() == 6 && w[3] == std::to_string(run.workload_pid))
      theirs.push_back(w[1] + " " + w[2] + " " + w[3] + " " + w[4] + " " + w[5]);
  }
  std::string me = std::to_string(::getpid());
  std::string tail = std::to_string(run.workload_pid) + " bpfql-wl ";
  REQUIRE(ours.size() == 2);
  CHECK(ours[0].rfind(me + " ", 0) == 0);
  CHECK(ours[0].find(tail + "0.030") != std::string::npos);
  CHECK(ours[1].find(tail + "1.100") != std::string::npos);
  CHECK(ours == theirs);
}

// bitesize.bt prints "@[comm]:" then "[4K, 8K)   32 |@@@|" lines; returns lower bound -> count.
std::map<int64_t, int64_t> bpftrace_hist(const std::vector<std::string>& lines, const std::string& key) {
  std::map<int64_t, int64_t> buckets;
  bool in = false;
  for (const std::string& line : lines) {
    if (line.rfind("@[", 0) == 0) {
      in = line.rfind("@[" + key + "]:", 0) == 0;
      continue;
    }
    if (!in || line.empty() || line[0] != '[') continue;
    std::string low = line.substr(1, line.find(',') - 1);
    int64_t scale = 1;
    if (low.back() == 'K') scale = 1024;
    if (low.back() == 'M') scale = 1024 * 1024;
    if (scale != 1) low.pop_back();
    auto w = split_words(line.substr(line.find(')') + 1));
    if (!w.empty() && std::stoll(w[0]) > 0) buckets[std::stoll(low) * scale] = std::stoll(w[0]);
  }
  return buckets;
}

TEST_CASE("bitesize side by side with bitesize.bt: the same size histogram for one process name") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  // dd under a name of its own, so that no other process's I/O lands in its row.
  std::string dd = dir.file("bpfql-bsz");
  std::filesystem::copy_file("/bin/dd", dd);
  std::filesystem::permissions(dd, std::filesystem::perms::owner_all);
  std::string file = "/var/tmp/bpfql-bitesize-test-" + std::to_string(::getpid());
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("block/bitesize")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read x; " + dd + " if=/dev/zero of=" + file +
                                        " bs=8192 count=24 oflag=direct,sync 2>/dev/null; rm -f " + file},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/bitesize.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bitesize.bt:\n" << lines_text(reference));
  std::map<int64_t, int64_t> ours;
  for (const json& print : intervals_of(run, "bitesize"))
    for (const json& row : print["rows"])
      if (row["comm"] == "bpfql-bsz")
        for (const json& bucket : row["size"])
          if (as_int(bucket["count"]) > 0) ours[as_int(bucket["min"])] += as_int(bucket["count"]);
  std::map<int64_t, int64_t> theirs = bpftrace_hist(reference, "bpfql-bsz");
  // Every 8 KiB direct, synchronous write is at least one request of 8 KiB.
  CHECK(ours[8192] >= 24);
  CHECK(ours == theirs);
}

TEST_CASE("threadsnoop side by side with threadsnoop.bt's probe on libc: thread start functions") {
  BPFQL_REQUIRE_ROOT();
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/threadsnoop")},
                        // The sleep keeps the process alive while both resolve the symbol.
                        .workload = {"threads", "4", "sleep", "500"},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // threadsnoop.bt probes libpthread, where glibc 2.34+ programs never
                          // call pthread_create: the same probe on libc.
                          bt.start(bpftrace_e("uprobe:/lib/x86_64-linux-gnu/libc.so.6:pthread_create /pid == " +
                                              std::to_string(pid) +
                                              "/ { printf(\"%d %s\\n\", pid, usym(arg2)); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of_pid(run, "threadsnoop"))
    ours.insert(std::to_string(as_int(e["pid"])) + " " + e["func"].get<std::string>());
  for (const std::string& line : reference)
    if (line.rfind(std::to_string(run.workload_pid) + " ", 0) == 0) theirs.insert(line);
  CHECK(ours.size() == 4);
  CHECK(ours.count(std::to_string(run.workload_pid) + " bpfql_wl_thread") == 4);
  CHECK(ours == theirs);
}

TEST_CASE("capable side by side with capable.bt's check on the tracepoint: capability and verdict") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string path = dir.write("owned", "x");
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/capable")},
                        .workload = {"chown", "3", path},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // capable.bt needs a kprobe on cap_capable; the same check's tracepoint.
                          bt.start(bpftrace_e("tracepoint:capability:cap_capable /pid == " +
                                              std::to_string(pid) +
                                              "/ { printf(\"cap %d %d\\n\", args->cap, args->ret); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of_pid(run, "capable")) {
    std::string verdict = e["verdict"];
    ours.insert("cap " + std::to_string(as_int(e["cap"])) + " " + (verdict == "EPERM" ? "-1" : verdict));
    if (as_int(e["cap"]) == 0) CHECK(e["name"] == "CAP_CHOWN");
    if (as_int(e["cap"]) == 21) CHECK(e["name"] == "CAP_SYS_ADMIN");
  }
  for (const std::string& line : reference)
    if (line.rfind("cap ", 0) == 0) theirs.insert(line);
  CHECK(ours.count("cap 0 0") >= 3);  // CAP_CHOWN, granted to root, once per fchownat() at least
  CHECK(ours == theirs);
}

TEST_CASE("tcpdrop side by side with tcpdrop.bt's tracepoint: refused connects drop as NO_SOCKET") {
  BPFQL_REQUIRE_ROOT();
  LoopbackPort closed(/*listening=*/false);
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/tcpdrop")},
                        .workload = {"connect-refused", "4", std::to_string(closed.port())},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // tcpdrop.bt prints only drops whose skb has a socket (a refused SYN
                          // has none): the same tracepoint, every reason.
                          bt.start(bpftrace_e("tracepoint:skb:kfree_skb /pid == " + std::to_string(pid) +
                                              " && args->reason > 2/ { printf(\"drop %d\\n\", args->reason); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of_pid(run, "tcpdrop")) {
    ours.insert(e["reason"].get<std::string>());
    CHECK(as_int(e["ethertype"]) == 2048);
  }
  for (const std::string& line : reference)
    if (line.rfind("drop ", 0) == 0) theirs.insert(line == "drop 3" ? "NO_SOCKET" : line);
  // Each refused SYN is dropped once, in the sender's context on loopback.
  CHECK(ours.count("NO_SOCKET") == 4);
  CHECK(ours == theirs);
}

TEST_CASE("tcpstates side by side with BCC's tcpstates: the same transitions of the test's sockets") {
  BPFQL_REQUIRE_ROOT();
  LoopbackPort listener(/*listening=*/true);
  std::string port = std::to_string(listener.port());
  ReferenceTool bcc;
  TraceRun run = trace({.queries = {library_query("net/tcpstates")},
                        .workload = {"connect", "3", port},
                        .pass_pid = false,
                        .while_tracing = [&](const Process&) {
                          bcc.start({"/usr/sbin/tcpstates-bpfcc"}, "SKADDR",
                                    {.env = {{"PYTHONUNBUFFERED", "1"}}});
                        },
                        // FIN_WAIT1 -> FIN_WAIT2 runs when the peer's ACK is processed, in
                        // ksoftirqd on a busy machine: give it time before bpfql stops.
                        .after_workload = [] { usleep(500'000); }});
  std::vector<std::string> reference = bcc.stop();
  INFO("stderr:\n" << run.err << "tcpstates-bpfcc:\n" << lines_text(reference));
  // A socket's first change has no previous one: the client's CLOSE -> SYN_SENT at connect()
  // (its local port still 0), and the listener's child, cloned from the listener, LISTEN ->
  // SYN_RECV. bpfql keeps them (unmatched: keep) with no time in the old state; tcpstates
  // prints them with 0 ms.
  auto first = [](const std::string& t) {
    return t.ends_with(" CLOSE->SYN_SENT") || t.ends_with(" LISTEN->SYN_RECV");
  };
  // "LADDR:LPORT RADDR:RPORT OLD->NEW" for the sockets on the test's port.
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of(run, "tcpstates")) {
    std::string lport = std::to_string(as_int(e["lport"])), rport = std::to_string(as_int(e["rport"]));
    if (lport != port && rport != port) continue;
    std::string t = e["laddr"].get<std::string>() + ":" + lport + " " + e["raddr"].get<std::string>() +
                    ":" + rport + " " + e["old"].get<std::string>() + "->" + e["new"].get<std::string>();
    ours.insert(t);
    INFO(t << ": " << e.dump());
    REQUIRE(e.contains("in_old_ns"));
    if (first(t)) {
      CHECK(e["in_old_ns"].is_null());  // no duration, rather than a 0 that looks like one
    } else {
      CHECK(as_int(e["in_old_ns"]) > 0);
      CHECK(as_int(e["in_old_ns"]) < 10'000'000'000);
    }
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);  // SKADDR C-PID C-COMM LADDR LPORT RADDR RPORT OLD -> NEW MS
    if (w.size() != 11 || w[8] != "->" || (w[4] != port && w[6] != port)) continue;
    std::string t = w[3] + ":" + w[4] + " " + w[5] + ":" + w[6] + " " + w[7] + "->" + w[9];
    theirs.insert(t);
    if (first(t)) CHECK_MESSAGE(w[10] == "0.000", line);
  }
  // Each client goes CLOSE -> SYN_SENT -> ESTABLISHED -> FIN_WAIT1 and each of the listener's
  // children LISTEN -> SYN_RECV -> ESTABLISHED -> CLOSE_WAIT. What follows FIN_WAIT1 waits for
  // the child's ACK of the FIN, which the peer may delay (or send with its own FIN when the
  // test's listener closes): it comes in either tool's window or neither, and BCC's window ends
  // after bpfql's.
  auto deterministic = [](const std::string& t) { return t.find(" FIN_WAIT") == std::string::npos; };
  std::multiset<std::string> ours_fixed, theirs_fixed;
  for (const auto& t : ours)
    if (deterministic(t)) ours_fixed.insert(t);
  for (const auto& t : theirs)
    if (deterministic(t)) theirs_fixed.insert(t);
  CHECK(ours_fixed.size() == 3 * 6);
  std::size_t syn_sent = 0, syn_recv = 0, established = 0, fin_wait1 = 0;
  for (const auto& t : ours) {
    syn_sent += t.ends_with(" CLOSE->SYN_SENT");
    syn_recv += t.ends_with(" LISTEN->SYN_RECV");
    established += t.find(" SYN_SENT->ESTABLISHED") != std::string::npos;
    fin_wait1 += t.find(" ESTABLISHED->FIN_WAIT1") != std::string::npos;
  }
  CHECK(syn_sent == 3);
  CHECK(syn_recv == 3);
  CHECK(established == 3);
  CHECK(fin_wait1 == 3);
  CHECK(ours_fixed == theirs_fixed);
  CHECK(std::includes(theirs.begin(), theirs.end(), ours.begin(), ours.end()));
}

TEST_CASE("bashreadline side by side with bashreadline.bt: the lines an interactive bash read") {
  BPFQL_REQUIRE_ROOT();
  ReferenceTool bt;
  // The marker holds the workload's pid (the shell's $$): lines of other shells cannot match.
  TraceRun run = trace({.queries = {library_query("process/bashreadline")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read x; printf \"echo bpfql-rl-$$-one\\necho bpfql-rl-$$-two\\n\" | "
                                    "/bin/bash --norc --noprofile -i >/dev/null 2>&1"},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/bashreadline.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bashreadline.bt:\n" << lines_text(reference));
  std::string marker = "bpfql-rl-" + std::to_string(run.workload_pid) + "-";
  std::multiset<std::string> ours, theirs;  // "PID COMMAND"
  for (const json& e : events_of(run, "bashreadline")) {
    std::string command = e["command"];
    if (command.find(marker) != std::string::npos) ours.insert(std::to_string(as_int(e["pid"])) + " " + command);
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);  // TIME PID COMMAND...
    if (w.size() >= 3 && line.find(marker) != std::string::npos)
      theirs.insert(w[1] + " " + line.substr(line.find(w[2], line.find(w[1]) + w[1].size())));
  }
  CHECK(ours.size() == 2);
  CHECK(ours == theirs);
}

// A copy of a system binary under a name of its own (its comm), so that rows of the same tool run
// by anything else on the machine cannot match.
std::string renamed_copy(const TempDir& dir, const std::string& binary, const std::string& name) {
  std::string copy = dir.file(name);
  std::filesystem::copy_file(binary, copy);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all);
  return copy;
}

TEST_CASE("statsnoop side by side with statsnoop.bt: the paths stat'ed and their errors") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string found = dir.write("found", "x"), missing = dir.file("missing");
  ReferenceTool bt;
  // statx(), which statsnoop.bt traces (glibc's stat() is newfstatat, which it does not).
  TraceRun run = trace({.queries = {library_query("syscalls/statsnoop")},
                        .workload = {"statx", "3", found, "statx", "2", missing},
                        .pass_pid = false,
                        .pid_option = true,  // a build next door makes thousands of stat() a second
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/statsnoop.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  std::string all = lines_text(reference);
  INFO("stderr:\n" << run.err << "statsnoop.bt, the end:\n" << all.substr(all.size() > 3000 ? all.size() - 3000 : 0)
                    << "statsnoop.bt's stderr:\n" << bt.err());
  std::multiset<std::string> ours, theirs;  // "PATH ERRNO"
  for (const json& e : events_of_pid(run, "statsnoop")) {
    std::string result = e["result"];
    ours.insert(e["path"].get<std::string>() + " " + (result == "ENOENT" ? "2" : result));
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);  // PID COMM ERR PATH
    if (w.size() == 4 && w[0] == std::to_string(run.workload_pid)) theirs.insert(w[3] + " " + w[2]);
  }
  CHECK(ours.count(found + " 0") == 3);
  CHECK(ours.count(missing + " 2") == 2);
  CHECK(ours.size() == 5);
  if (!bt.lost_events()) {
    CHECK(ours == theirs);
  } else {  // statsnoop.bt traces every process and its buffer overflowed: what it saw, we saw
    MESSAGE("statsnoop.bt lost events on this busy machine: comparing what it printed");
    for (const auto& l : theirs) CHECK(ours.count(l) >= theirs.count(l));
  }
}

TEST_CASE("setuids side by side with setuids.bt: chroot --userspec's setuid()") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string chroot = renamed_copy(dir, "/usr/sbin/chroot", "bpfql-chroot");
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/setuids")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c", "read x; " + chroot + " --userspec=65534:65534 / /bin/true"},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/setuids.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "setuids.bt:\n" << lines_text(reference));
  // "PID UID setuid uid=NEW (RET)"
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of(run, "setuids")) {
    if (e["comm"] != "bpfql-chroot") continue;
    std::string call = e["call"];
    if (call.find("sys_exit_setuid") == std::string::npos) continue;
    ours.insert(std::to_string(as_int(e["pid"])) + " " + std::to_string(as_int(e["uid"])) + " setuid uid=" +
                std::to_string(as_int(e["new_uid"])) + " (" + e["result"].get<std::string>() + ")");
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);  // TIME PID COMM UID SYSCALL ARGS (RET)
    if (w.size() == 7 && w[2] == "bpfql-chroot" && w[4] == "setuid")
      theirs.insert(w[1] + " " + w[3] + " setuid " + w[5] + " " + w[6]);
  }
  REQUIRE(ours.size() == 1);
  CHECK(ours.begin()->find(" 0 setuid uid=65534 (0)") != std::string::npos);
  CHECK(ours == theirs);
}

TEST_CASE("gethostlatency side by side with gethostlatency.bt: the host looked up") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string getent = renamed_copy(dir, "/usr/bin/getent", "bpfql-getent");
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/gethostlatency")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c", "read x; " + getent + " ahosts localhost >/dev/null; true"},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/gethostlatency.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "gethostlatency.bt:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;  // "PID HOST"
  for (const json& e : events_of(run, "gethostlatency"))
    if (e["comm"] == "bpfql-getent") ours.insert(std::to_string(as_int(e["pid"])) + " " + e["host"].get<std::string>());
  for (const std::string& line : reference) {
    auto w = split_words(line);  // TIME PID COMM LATms HOST
    if (w.size() == 5 && w[2] == "bpfql-getent") theirs.insert(w[1] + " " + w[4]);
  }
  REQUIRE(ours.size() == 1);
  CHECK(ours.begin()->find(" localhost") != std::string::npos);
  CHECK(ours == theirs);
}

TEST_CASE("exitsnoop side by side with a bpftrace rewrite of exitsnoop: pid, parent and exit code") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string sh = renamed_copy(dir, "/bin/dash", "bpfql-exit3");
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/exitsnoop")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c", "read x; " + sh + " -c 'exit 3'; true"},
                        .while_tracing = [&](const Process&) {
                          // exitsnoop-bpfcc reads task_struct through the 6.1 headers bcc compiles
                          // with here and prints nothing on 6.18: the same reads through BTF.
                          bt.start(bpftrace_e("tracepoint:sched:sched_process_exit /comm == \"bpfql-exit3\"/ "
                                              "{ printf(\"exit %d %d %d\\n\", pid, curtask->real_parent->tgid, "
                                              "(curtask->exit_code >> 8) & 0xff); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::vector<std::string> ours, theirs;  // "exit PID PPID CODE"
  for (const json& e : events_of(run, "exitsnoop"))
    if (e["comm"] == "bpfql-exit3")
      ours.push_back("exit " + std::to_string(as_int(e["pid"])) + " " + std::to_string(as_int(e["ppid"])) + " " +
                     std::to_string(as_int(e["code"])));
  for (const std::string& line : reference)
    if (line.rfind("exit ", 0) == 0) theirs.push_back(line);
  REQUIRE(ours.size() == 1);
  CHECK(ours[0].find(" " + std::to_string(run.workload_pid) + " 3") != std::string::npos);
  CHECK(ours == theirs);
}

TEST_CASE("tcpconnect side by side with a bpftrace rewrite of tcpconnect.bt: the workload's connects") {
  BPFQL_REQUIRE_ROOT();
  LoopbackPort listener(/*listening=*/true);
  std::string port = std::to_string(listener.port());
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/tcpconnect")},
                        .workload = {"connect", "3", port},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // tcpconnect.bt needs a kprobe on tcp_connect: the SYN_SENT change instead.
                          bt.start(bpftrace_e("tracepoint:sock:inet_sock_set_state /args->newstate == 2 && "
                                              "args->protocol == 6 && pid == " + std::to_string(pid) +
                                              "/ { printf(\"connect %d %s %s %d\\n\", pid, comm, "
                                              "ntop(args->daddr), args->dport); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of_pid(run, "tcpconnect"))
    ours.insert("connect " + std::to_string(as_int(e["pid"])) + " " + e["comm"].get<std::string>() + " " +
                e["args.daddr"].get<std::string>() + " " + std::to_string(as_int(e["args.dport"])));
  for (const std::string& line : reference)
    if (line.rfind("connect ", 0) == 0) theirs.insert(line);
  CHECK(ours.size() == 3);
  CHECK(ours.count("connect " + std::to_string(run.workload_pid) + " bpfql-wl 127.0.0.1 " + port) == 3);
  CHECK(ours == theirs);
}

TEST_CASE("writeback side by side with writeback.bt: a sync's writeback of the disk") {
  BPFQL_REQUIRE_ROOT();
  std::string file = "/var/tmp/bpfql-writeback-test-" + std::to_string(::getpid());
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("mm/writeback")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read x; dd if=/dev/zero of=" + file + " bs=65536 count=64 2>/dev/null; sync; rm -f " + file},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/writeback.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "writeback.bt:\n" << lines_text(reference));
  // "DEVICE REASON" of each writeback. writeback.bt also prints the writebacks whose start it
  // did not see (latency 0), which a span leaves out: what bpfql printed, writeback.bt printed.
  std::multiset<std::string> ours, theirs;
  for (const json& e : events_of(run, "writeback"))
    ours.insert(e["device"].get<std::string>() + " " + e["reason"].get<std::string>());
  for (const std::string& line : reference) {
    auto w = split_words(line);  // TIME DEVICE PAGES REASON ms
    if (w.size() == 5 && w[0].find(':') != std::string::npos) theirs.insert(w[1] + " " + w[3]);
  }
  // bpfql attached before writeback.bt did, so the background writebacks of that moment are
  // only in bpfql's: the workload's sync is compared.
  std::string shown;
  std::size_t syncs = 0;
  for (const auto& l : ours) {
    shown += l + "\n";
    syncs += l.size() > 5 && l.substr(l.size() - 5) == " sync";
  }
  INFO("bpfql:\n" << shown);
  CHECK(syncs >= 1);
  for (const auto& l : ours)
    if (l.size() > 5 && l.substr(l.size() - 5) == " sync") CHECK(theirs.count(l) >= ours.count(l));
}

TEST_CASE("ssllatency side by side with ssllatency.bt: OpenSSL calls by function and success") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  Completed cert = run_to_completion({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                                      dir.file("key.pem"), "-out", dir.file("cert.pem"), "-subj", "/CN=bpfql",
                                      "-days", "1"},
                                     milliseconds(30000));
  REQUIRE(cert.status.exited_with(0));
  std::string port = std::to_string(20000 + ::getpid() % 20000);
  Process server = Process::spawn({"/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:" + port, "-cert",
                                   dir.file("cert.pem"), "-key", dir.file("key.pem"), "-www", "-naccept", "1"});
  REQUIRE(server.wait_for_stdout("ACCEPT", milliseconds(30000)));
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/ssllatency")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read x; printf 'GET / HTTP/1.0\\r\\n\\r\\n' | /usr/bin/openssl s_client -connect 127.0.0.1:" +
                                        port + " -quiet >/dev/null 2>&1; true"},
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "/usr/sbin/ssllatency.bt"}, "Hit Ctrl-C");
                        }});
  server.wait(milliseconds(10000));
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "ssllatency.bt:\n" << lines_text(reference));
  // Per function: calls that succeeded and that failed (SSL_read of a non-blocking socket fails
  // with WANT_READ); both count every process's calls, client and server. ssllatency.bt names
  // the function by `func`, which it resolves when it prints, after the processes exited: it
  // prints addresses. And it splits by `(int8)retval >= 1`, so a read of 256 bytes counts as a
  // failure there (bpfql: `(s32)retval > 0`). So the functions are matched by their calls.
  std::map<std::string, std::pair<int64_t, int64_t>> ours, theirs;
  for (const json& print : intervals_of(run, "ssllatency"))
    for (const json& row : print["rows"]) {
      std::string function = row["function"];
      bool ok = row["ok"].is_boolean() ? row["ok"].get<bool>() : as_int(row["ok"]) != 0;
      auto& counts = ours[function.substr(function.rfind(':') + 1)];
      (ok ? counts.first : counts.second) += as_int(row["calls"]);
    }
  for (const std::string& line : reference) {  // @stat[SSL_read]: count 9, average 23, total 207
    bool failed = line.rfind("@statF[", 0) == 0;
    if (!failed && line.rfind("@stat[", 0) != 0) continue;
    std::string function = line.substr(line.find('[') + 1, line.find(']') - line.find('[') - 1);
    auto w = split_words(line.substr(line.find(':') + 1));
    if (w.size() >= 2 && w[0] == "count") (failed ? theirs[function].second : theirs[function].first) = std::stoll(w[1]);
  }
  std::multiset<int64_t> our_counts, their_counts;
  std::string shown;
  for (const auto& [function, counts] : ours) {
    our_counts.insert(counts.first + counts.second);
    shown += function + " ok " + std::to_string(counts.first) + " failed " + std::to_string(counts.second) + "\n";
  }
  for (const auto& [function, counts] : theirs) their_counts.insert(counts.first + counts.second);
  INFO("bpfql:\n" << shown);
  CHECK(ours["SSL_read"].first >= 1);  // the server read the request, the client the answer
  CHECK(ours["SSL_write"].first >= 1);
  CHECK(our_counts == their_counts);
}

TEST_CASE("tcplife side by side with a bpftrace rewrite of tcplife.bt: each session's process and ports") {
  BPFQL_REQUIRE_ROOT();
  std::optional<LoopbackPort> listener(std::in_place, /*listening=*/true);
  std::string port = std::to_string(listener->port());
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/tcplife")},
                        .workload = {"connect", "3", port},
                        .pass_pid = false,
                        .while_tracing = [&](const Process&) {
                          // tcplife.bt needs a kprobe on tcp_set_state: its logic on the state
                          // change tracepoint (the process at the last change to SYN_SENT,
                          // SYN_RECV or ESTABLISHED; a line at CLOSE).
                          bt.start(bpftrace_e("tracepoint:sock:inet_sock_set_state /args->protocol == 6/ {"
                                              " if (args->newstate < 4) { @pid[args->skaddr] = pid; }"
                                              " if (args->newstate == 7 && @pid[args->skaddr]) {"
                                              " printf(\"life %d %d %d\\n\", @pid[args->skaddr], args->sport, args->dport);"
                                              " delete(@pid[args->skaddr]); } }"),
                                   "ready");
                        },
                        // Closing the listener resets its children and the clients' sockets close.
                        .after_workload = [&] {
                          listener.reset();
                          usleep(300'000);
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::multiset<std::string> ours, theirs;  // "life PID LPORT RPORT"
  for (const json& e : events_of(run, "tcplife")) {
    std::string lport = std::to_string(as_int(e["lport"])), rport = std::to_string(as_int(e["rport"]));
    if (lport == port || rport == port)
      ours.insert("life " + std::to_string(as_int(e["pid"])) + " " + lport + " " + rport);
  }
  for (const std::string& line : reference) {
    auto w = split_words(line);
    if (w.size() == 4 && w[0] == "life" && (w[2] == port || w[3] == port)) theirs.insert(line);
  }
  std::size_t clients = 0;
  for (const auto& l : ours)
    clients += l.rfind("life " + std::to_string(run.workload_pid) + " ", 0) == 0 &&
               l.substr(l.size() - port.size() - 1) == " " + port;
  CHECK(clients == 3);
  CHECK(ours == theirs);
}

TEST_CASE("tcpaccept side by side with a bpftrace rewrite: each accept() with its process and ports") {
  BPFQL_REQUIRE_ROOT();
  // The workload listens on 127.0.0.1, connects 4 times to itself and accepts them: accept()
  // twice, accept4() twice. It reports the listener's port and each accepted client's port.
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("net/tcpaccept")},
                        .workload = {"accept", "4"},
                        .pass_pid = false,
                        .pid_option = true,
                        .while_tracing_pid = [&](pid_t pid) {
                          // tcpaccept.bt needs a kretprobe on inet_csk_accept: the same socket
                          // through the fd table at the syscalls' return instead.
                          bt.start(bpftrace_e(
                                       "tracepoint:syscalls:sys_exit_accept, tracepoint:syscalls:sys_exit_accept4 "
                                       "/args->ret >= 0 && pid == " + std::to_string(pid) + "/ { "
                                       "$sk = ((struct socket *)(*(curtask->files->fdt->fd + args->ret))->private_data)->sk; "
                                       "$d = $sk->__sk_common.skc_dport; "
                                       "printf(\"accept %d %s %s %d %s %d\\n\", pid, comm, ntop($sk->__sk_common.skc_rcv_saddr), "
                                       "$sk->__sk_common.skc_num, ntop($sk->__sk_common.skc_daddr), (($d & 0xff) << 8) | ($d >> 8)); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference) << "workload:\n" << run.workload_out);
  CHECK(run.status.exited_with(0));
  // The workload's own account: "done accept-port P", then "done accept-client P" per accept.
  std::string port;
  std::vector<std::string> expected;
  std::istringstream out(run.workload_out);
  for (std::string line; std::getline(out, line);) {
    if (line.rfind("done accept-port ", 0) == 0) port = line.substr(17);
    if (line.rfind("done accept-client ", 0) == 0) expected.push_back(line.substr(19));
  }
  REQUIRE(expected.size() == 4);
  std::string prefix = "accept " + std::to_string(run.workload_pid) + " bpfql-wl 127.0.0.1 " + port + " 127.0.0.1 ";
  std::multiset<std::string> ours, theirs;  // "accept PID COMM LADDR LPORT RADDR RPORT"
  for (const json& e : events_of(run, "tcpaccept"))
    ours.insert("accept " + std::to_string(as_int(e["pid"])) + " " + e["comm"].get<std::string>() + " " +
                   e["laddr"].get<std::string>() + " " + std::to_string(as_int(e["lport"])) + " " +
                   e["raddr"].get<std::string>() + " " + std::to_string(as_int(e["rport"])));
  for (const std::string& line : reference)
    if (line.rfind("accept ", 0) == 0) theirs.insert(line);
  std::multiset<std::string> known;
  for (const auto& client : expected) known.insert(prefix + client);
  CHECK(ours == known);
  CHECK(theirs == known);
}

// A memory cgroup (v1, as mounted here) of its own with a small limit, removed at scope exit.
class MemoryCgroup {
 public:
  explicit MemoryCgroup(const std::string& limit)
      : path_("/sys/fs/cgroup/memory/bpfql-oom-test-" + std::to_string(::getpid())) {
    std::filesystem::create_directory(path_);
    std::ofstream(path_ + "/memory.limit_in_bytes") << limit;
  }
  ~MemoryCgroup() { ::rmdir(path_.c_str()); }
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_CASE("oomkill side by side with oomkill.bt's event on the tracepoint: a cgroup's OOM kill") {
  BPFQL_REQUIRE_ROOT();
  if (access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) != 0) {
    MESSAGE("skipped: no cgroup v1 memory controller at /sys/fs/cgroup/memory");
    return;
  }
  MemoryCgroup cgroup("33554432");
  TempDir dir;
  // tail -c keeps the last 256 MiB it read from the pipe: it grows until the cgroup's 32 MiB
  // limit kills it (were there no kill, it would end after 256 MiB and the test fail).
  std::string tail = dir.file("bpfql-oomt");
  std::filesystem::copy_file("/usr/bin/tail", tail);
  std::filesystem::permissions(tail, std::filesystem::perms::owner_all);
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("mm/oomkill")},
                        .pass_pid = false,
                        // Only an inner shell and its pipeline join the cgroup: when tail's kill
                        // leaves the cgroup still at its limit, a second kill may take head or
                        // that shell, never the workload itself.
                        .command = {"/bin/sh", "-c",
                                    "read x; /bin/sh -c 'echo $$ > " + cgroup.path() +
                                        "/cgroup.procs; head -c 268435456 /dev/zero | " + tail +
                                        " -c 268435456 >/dev/null'; true"},
                        .while_tracing = [&](const Process&) {
                          // oomkill.bt needs a kprobe on oom_kill_process: the same event's tracepoint.
                          bt.start(bpftrace_e("tracepoint:oom:mark_victim { printf(\"oom %d %s %d %s\\n\", "
                                              "pid, comm, args->pid, str(args->comm)); }"),
                                   "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  std::vector<std::string> ours, theirs;
  for (const json& e : events_of(run, "oomkill")) {
    if (e["victim"] != "bpfql-oomt") continue;
    ours.push_back("oom " + std::to_string(as_int(e["trigger_pid"])) + " " + e["trigger_comm"].get<std::string>() +
                   " " + std::to_string(as_int(e["victim_pid"])) + " " + e["victim"].get<std::string>());
    CHECK(as_int(e["total_vm_kb"]) > 32 * 1024);
  }
  for (const std::string& line : reference)
    if (line.find(" bpfql-oomt") != std::string::npos) theirs.push_back(line);
  REQUIRE(ours.size() == 1);
  auto w = split_words(ours[0]);
  // The allocation that hit the limit was tail's own or head's (a pipe page charged to the same
  // cgroup): whichever it was, the kill chose tail, the big one.
  CHECK((w[2] == "bpfql-oomt" || w[2] == "head"));
  if (w[2] == "bpfql-oomt") CHECK(w[1] == w[3]);
  CHECK(ours == theirs);
}

}  // namespace
}  // namespace bpfql::test
