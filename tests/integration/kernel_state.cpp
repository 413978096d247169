#include "tests/integration/kernel_state.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace bpfql::test {
namespace fs = std::filesystem;

namespace {

// Ids in the `field` line of the fdinfo of each fd of `pid` that links to `target`.
std::vector<uint32_t> bpf_ids_held_by(pid_t pid, const std::string& target, const std::string& field) {
  std::vector<uint32_t> ids;
  std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc + "/fd", ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(entry.path(), link_ec).string() != target) continue;
    std::ifstream info(proc + "/fdinfo/" + entry.path().filename().string());
    for (std::string line; std::getline(info, line);)
      if (line.rfind(field, 0) == 0) ids.push_back(static_cast<uint32_t>(std::stoul(line.substr(field.size()))));
  }
  return ids;
}

}  // namespace

std::vector<uint32_t> bpf_programs_held_by(pid_t pid) { return bpf_ids_held_by(pid, "anon_inode:bpf-prog", "prog_id:"); }

std::vector<uint32_t> bpf_maps_held_by(pid_t pid) { return bpf_ids_held_by(pid, "anon_inode:bpf-map", "map_id:"); }

std::vector<std::string> raw_tracepoints_held_by(pid_t pid) {
  std::vector<std::string> names;
  std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc + "/fdinfo", ec)) {
    std::ifstream info(entry.path());
    bool raw = false;
    std::string name;
    for (std::string line; std::getline(info, line);) {
      if (line == "link_type:\traw_tracepoint") raw = true;
      if (line.rfind("tp_name:\t", 0) == 0) name = line.substr(9);
    }
    if (raw) names.push_back(name);
  }
  return names;
}

bool bpf_program_loaded(uint32_t id) {
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_id = id;
  int fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &attr, sizeof attr));
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return errno != ENOENT;  // anything but "no such program" (EPERM...) counts as still there
}

std::vector<uint32_t> still_loaded(const std::vector<uint32_t>& ids, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<uint32_t> left;
    for (uint32_t id : ids)
      if (bpf_program_loaded(id)) left.push_back(id);
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> probe_events_containing(const std::string& needle) {
  std::vector<std::string> found;
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    for (const char* file : {"uprobe_events", "kprobe_events"}) {
      std::ifstream in(std::string(root) + "/" + file);
      for (std::string line; std::getline(in, line);)
        if (line.find(needle) != std::string::npos) found.push_back(std::string(file) + ": " + line);
    }
  return found;
}

std::string status_field(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream value(line.substr(field.size() + 1));
      std::string v;
      value >> v;
      return v;
    }
  return "";
}

uint64_t status_mask(pid_t pid, const std::string& field) {
  std::string v = status_field(pid, field);
  return v.empty() ? ~uint64_t{0} : std::stoull(v, nullptr, 16);
}

}  // namespace bpfql::test
