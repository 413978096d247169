#include "runtime/load/attach_cookie.h"

#include <bcc/libbpf.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace bpfql {
namespace {

constexpr int kKernelEnotsupp = 524;  // the kernel's ENOTSUPP (not in userspace errno.h)

// The tracepoint's perf event id, from tracefs (where libbcc looks first, as attach does).
long tracepoint_id(const std::string& category, const std::string& name) {
  for (const char* root : {"/sys/kernel/debug/tracing/events/", "/sys/kernel/tracing/events/"}) {
    std::ifstream in(std::string(root) + category + "/" + name + "/id");
    long id = -1;
    if (in >> id) return id;
  }
  return -1;
}

}  // namespace

std::string attach_tracepoint_with_cookie(int prog, const std::string& category,
                                          const std::string& name, uint64_t cookie,
                                          Attachments& out, bool* no_link) {
  long id = tracepoint_id(category, name);
  if (id < 0) return "no id for the tracepoint in tracefs";
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = static_cast<uint64_t>(id);
  attr.sample_type = PERF_SAMPLE_RAW;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  // A tracepoint's BPF program runs for every CPU whatever CPU the event was opened on (as
  // libbcc's bpf_attach_tracepoint: cpu 0, every process).
  int perf_fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
  if (perf_fd < 0) return std::string("perf_event_open: ") + std::strerror(errno);
  out.owned().push_back({perf_fd, "", ProbeKind::Tracepoint});
  bpf_attr link;
  std::memset(&link, 0, sizeof link);
  link.link_create.prog_fd = static_cast<uint32_t>(prog);
  link.link_create.target_fd = static_cast<uint32_t>(perf_fd);
  link.link_create.attach_type = BPF_PERF_EVENT;
  link.link_create.perf_event.bpf_cookie = cookie;
  int link_fd = static_cast<int>(syscall(SYS_bpf, BPF_LINK_CREATE, &link, sizeof link));
  if (link_fd < 0 && no_link && (errno == EINVAL || errno == EOPNOTSUPP || errno == kKernelEnotsupp)) {
    *no_link = true;
    close(perf_fd);
    out.owned().pop_back();
  }
  if (link_fd < 0)
    return std::string("this kernel cannot attach a tracepoint program with a BPF cookie "
                       "(BPF_LINK_CREATE): ") +
           std::strerror(errno);
  out.owned().push_back({link_fd, "", ProbeKind::Tracepoint, true});
  if (ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
    return std::string("cannot enable the tracepoint's perf event: ") + std::strerror(errno);
  return "";
}

}  // namespace bpfql
