// bench_baseline: loads a hand-written BCC C program with libbcc, attaches it, waits, prints
// its maps and exits — the "hand-written BCC" and "empty program" modes of the benchmarks,
// without Python.
//
//   bench_baseline FILE.c [-t CATEGORY:NAME=FUNCTION]... [-r NAME=FUNCTION]... [--dump N]
//                  [-D NAME=VALUE]...
//
// Every TRACEPOINT_PROBE(category, name) in FILE.c is attached to its tracepoint; -t attaches
// a plain function as well (several tracepoints may share one function); -r attaches a plain
// function as a raw tracepoint (the tracepoint's name alone, e.g. sys_enter). Once everything is
// attached it prints "Tracing N tracepoints" on stderr, then waits for SIGINT/SIGTERM or end
// of stdin, detaches (timed), and prints each map: up to N entries (default 20, 0 = none),
// per-CPU values summed, zero array slots skipped. Timings go to stderr as "timing: ..." lines.
#include <bcc/BPF.h>
#include <bcc/libbpf.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

struct Options {
  std::string file;
  std::vector<std::pair<std::string, std::string>> attach;  // tracepoint, function
  std::vector<std::pair<std::string, std::string>> raw;     // raw tracepoint, function
  std::vector<std::string> cflags;
  int dump = 20;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_baseline FILE.c [-t CATEGORY:NAME=FUNCTION]... "
               "[-r NAME=FUNCTION]... [--dump N] [-D NAME=VALUE]...\n");
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if ((arg == "-t" || arg == "-r") && has_value) {
      std::string spec = argv[++i];
      auto eq = spec.find('=');
      if (eq == std::string::npos) usage();
      (arg == "-t" ? options.attach : options.raw)
          .emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (arg == "--dump" && has_value) {
      options.dump = std::atoi(argv[++i]);
    } else if (arg == "-D" && has_value) {
      options.cflags.push_back("-D" + std::string(argv[++i]));
    } else if (!arg.empty() && arg[0] != '-' && options.file.empty()) {
      options.file = arg;
    } else {
      usage();
    }
  }
  if (options.file.empty()) usage();
  return options;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bench_baseline: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs PATTERN (anchored at the start of a line) over each line of SOURCE; returns the
// submatches of each line that matches.
std::vector<std::smatch> match_lines(const std::string& source, const std::regex& pattern,
                                     std::vector<std::string>& lines) {
  std::stringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::smatch> found;
  for (const auto& line : lines) {
    std::smatch match;
    if (std::regex_search(line, match, pattern)) found.push_back(match);
  }
  return found;
}

// TRACEPOINT_PROBE(cat, name) defines the function tracepoint__cat__name.
std::vector<std::pair<std::string, std::string>> tracepoint_probes(const std::string& source) {
  static const std::regex probe(R"(^\s*TRACEPOINT_PROBE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\))");
  std::vector<std::string> lines;
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& match : match_lines(source, probe, lines)) {
    std::string category = match[1], name = match[2];
    found.emplace_back(category + ":" + name, "tracepoint__" + category + "__" + name);
  }
  return found;
}

// Map names from the BPF_HASH / BPF_PERCPU_ARRAY / ... declarations.
std::vector<std::string> map_names(const std::string& source) {
  static const std::regex table(R"(^\s*BPF_[A-Z_]+\s*\(\s*(\w+))");
  std::vector<std::string> lines;
  std::vector<std::string> found;
  for (const auto& match : match_lines(source, table, lines)) found.push_back(match[1]);
  return found;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void wait_for_stop() {
  struct pollfd input = {STDIN_FILENO, POLLIN, 0};
  while (!g_stop) {
    int ready = poll(&input, 1, 200);
    if (ready > 0) {
      char byte;
      if (read(STDIN_FILENO, &byte, 1) <= 0) return;  // EOF: the harness closed stdin
    } else if (ready < 0 && errno != EINTR) {
      return;
    }
  }
}

// A 4- or 8-byte key is shown as an unsigned integer (pids, slots, offsets); a longer one as
// text when it is a NUL-terminated printable string (comm), else as hex.
std::string format_key(const std::vector<uint8_t>& key) {
  if (key.size() == 4 || key.size() == 8) {
    uint64_t value = 0;
    std::memcpy(&value, key.data(), key.size());
    return std::to_string(value);
  }
  size_t len = 0;
  while (len < key.size() && key[len] >= 0x20 && key[len] < 0x7f) ++len;
  bool text = len > 0 && len < key.size();
  for (size_t i = len; text && i < key.size(); ++i) text = key[i] == 0;
  if (text) return std::string(key.begin(), key.begin() + static_cast<long>(len));
  std::string hex;
  char byte[3];
  for (uint8_t b : key) {
    std::snprintf(byte, sizeof(byte), "%02x", b);
    hex += byte;
  }
  return hex;
}

// Per-CPU map values come as one slot per possible CPU: count "0-3,5" style ranges.
size_t possible_cpus() {
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string ranges;
  std::getline(in, ranges);
  size_t count = 0;
  std::stringstream parts(ranges);
  for (std::string part; std::getline(parts, part, ',');) {
    auto dash = part.find('-');
    size_t first = std::stoul(part.substr(0, dash));
    size_t last = dash == std::string::npos ? first : std::stoul(part.substr(dash + 1));
    count += last - first + 1;
  }
  return count > 0 ? count : 1;
}

// Sums a value over CPUs as u64 (all baseline values are u64 counters, sums or timestamps).
uint64_t value_sum(const std::vector<uint8_t>& raw, size_t stride, size_t cpus) {
  uint64_t total = 0;
  for (size_t cpu = 0; cpu < cpus; ++cpu) {
    uint64_t value = 0;
    std::memcpy(&value, raw.data() + cpu * stride, std::min<size_t>(8, stride));
    total += value;
  }
  return total;
}

void dump_map(ebpf::BPF& bpf, const std::string& name, int limit) {
  int fd = bpf.get_table(name).get_fd();
  struct bpf_map_info info = {};
  uint32_t info_len = sizeof(info);
  if (fd < 0 || bpf_obj_get_info(fd, &info, &info_len) != 0) return;
  bool percpu = info.type == BPF_MAP_TYPE_PERCPU_HASH || info.type == BPF_MAP_TYPE_PERCPU_ARRAY;
  bool array = info.type == BPF_MAP_TYPE_ARRAY || info.type == BPF_MAP_TYPE_PERCPU_ARRAY;
  size_t cpus = percpu ? possible_cpus() : 1;
  size_t stride = percpu ? (info.value_size + 7u) / 8u * 8u : info.value_size;
  std::vector<uint8_t> key(info.key_size), next(info.key_size), value(stride * cpus);
  std::vector<std::pair<std::string, uint64_t>> rows;
  void* previous = nullptr;
  while (bpf_get_next_key(fd, previous, next.data()) == 0) {
    key = next;
    previous = key.data();
    if (bpf_lookup_elem(fd, key.data(), value.data()) != 0) continue;
    uint64_t total = value_sum(value, stride, cpus);
    if (array && total == 0) continue;
    rows.emplace_back(format_key(key), total);
  }
  size_t entries = rows.size();
  // Largest first, like the tools' top-N output.
  size_t shown = std::min(rows.size(), static_cast<size_t>(limit));
  std::partial_sort(rows.begin(), rows.begin() + static_cast<long>(shown), rows.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  rows.resize(shown);
  std::printf("map %s entries=%zu\n", name.c_str(), entries);
  for (const auto& [text, total] : rows) {
    std::printf("  %s\t%llu\n", text.c_str(), static_cast<unsigned long long>(total));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv);
  std::string source = read_file(options.file);
  auto attach = tracepoint_probes(source);
  attach.insert(attach.end(), options.attach.begin(), options.attach.end());
  if (attach.empty() && options.raw.empty()) {
    std::fprintf(stderr, "bench_baseline: %s has no TRACEPOINT_PROBE and no -t or -r given\n",
                 options.file.c_str());
    return 2;
  }
  struct sigaction action = {};
  action.sa_handler = on_signal;  // no SA_RESTART: poll() returns EINTR at once
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  auto start = std::chrono::steady_clock::now();
  ebpf::BPF bpf;
  auto status = bpf.init(source, options.cflags);
  if (!status.ok()) {
    std::fprintf(stderr, "bench_baseline: init: %s\n", status.msg().c_str());
    return 1;
  }
  double init_ms = ms_since(start);
  for (const auto& [tracepoint, function] : attach) {
    status = bpf.attach_tracepoint(tracepoint, function);
    if (!status.ok()) {
      std::fprintf(stderr, "bench_baseline: attach %s: %s\n", tracepoint.c_str(),
                   status.msg().c_str());
      return 1;
    }
  }
  for (const auto& [tracepoint, function] : options.raw) {
    status = bpf.attach_raw_tracepoint(tracepoint, function);
    if (!status.ok()) {
      std::fprintf(stderr, "bench_baseline: attach raw %s: %s\n", tracepoint.c_str(),
                   status.msg().c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "timing: init_ms=%.1f attach_ms=%.1f\n", init_ms, ms_since(start) - init_ms);
  std::fprintf(stderr, "Tracing %zu tracepoints\n", attach.size() + options.raw.size());

  wait_for_stop();
  auto stop = std::chrono::steady_clock::now();
  for (const auto& [tracepoint, function] : attach) bpf.detach_tracepoint(tracepoint);
  for (const auto& [tracepoint, function] : options.raw) bpf.detach_raw_tracepoint(tracepoint);
  double detach_ms = ms_since(stop);
  if (options.dump > 0) {
    for (const auto& name : map_names(source)) dump_map(bpf, name, options.dump);
  }
  std::fprintf(stderr, "timing: detach_ms=%.1f total_exit_ms=%.1f\n", detach_ms, ms_since(stop));
  return 0;
}
