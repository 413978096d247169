// errno number → name for errno(): glibc's table for the userspace errnos, plus the kernel's
// internal ones (include/linux/errno.h) that tracepoints see before the syscall exit path
// rewrites them, e.g. -ERESTARTSYS on an interrupted read.
#include <string.h>

#include <optional>
#include <string_view>

#include "runtime/collect/display.h"

namespace bpfql {
namespace {

struct KernelErrno {
  int number;
  std::string_view name;
};

constexpr KernelErrno kKernelInternal[] = {
    {512, "ERESTARTSYS"},
    {513, "ERESTARTNOINTR"},
    {514, "ERESTARTNOHAND"},
    {515, "ENOIOCTLCMD"},
    {516, "ERESTART_RESTARTBLOCK"},
    {517, "EPROBE_DEFER"},
    {518, "EOPENSTALE"},
    {519, "ENOPARAM"},
    {521, "EBADHANDLE"},
    {522, "ENOTSYNC"},
    {523, "EBADCOOKIE"},
    {524, "ENOTSUPP"},
    {525, "ETOOSMALL"},
    {526, "ESERVERFAULT"},
    {527, "EBADTYPE"},
    {528, "EJUKEBOX"},
    {529, "EIOCBQUEUED"},
    {530, "ERECALLCONFLICT"},
    {531, "ENOGRACE"},
};

}  // namespace

std::optional<std::string_view> errno_name(int err) {
  if (err <= 0) return std::nullopt;
  // glibc >= 2.32; returns nullptr for numbers it does not know.
  if (const char* name = strerrorname_np(err)) return std::string_view(name);
  for (const auto& e : kKernelInternal) {
    if (e.number == err) return e.name;
  }
  return std::nullopt;
}

}  // namespace bpfql
