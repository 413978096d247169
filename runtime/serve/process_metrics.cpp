// process_* and bpfql_build_info (see process_metrics.h).
#include "runtime/serve/process_metrics.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runtime/render/prometheus.h"

namespace bpfql {
namespace {

// Fields of /proc/self/stat after the command (which may hold spaces and parentheses).
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> fields;
  auto close = text.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 2));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;  // fields[0] is field 3 (state)
}

double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("btime ")) return std::stod(line.substr(6));
  return 0;
}

void family(std::string& out, const char* name, const char* help, const char* type, const std::string& value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

}  // namespace

std::string render_process_metrics(const std::string& version) {
  std::string out;
  utsname u{};
  uname(&u);
  out += "# HELP bpfql_build_info Always 1: the labels say which bpfql and kernel serve these metrics\n"
         "# TYPE bpfql_build_info gauge\n";
  out += fmt::format("bpfql_build_info{{version=\"{}\",kernel=\"{}\"}} 1\n", prometheus_label_value(version),
                     prometheus_label_value(u.release));

  long ticks = sysconf(_SC_CLK_TCK);
  long page = sysconf(_SC_PAGESIZE);
  auto f = stat_fields();
  if (f.size() > 21 && ticks > 0) {
    // utime, stime: fields 14, 15; starttime 22; vsize 23; rss 24 (pages).
    double cpu = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(ticks);
    family(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
           prometheus_double(cpu));
    family(out, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge",
           prometheus_double(boot_time() + std::stod(f[19]) / static_cast<double>(ticks)));
    family(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", f[20]);
    family(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge",
           std::to_string(std::stoull(f[21]) * static_cast<unsigned long long>(page)));
  }
  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++fds;
  if (fds > 0) fds -= 1;  // the directory iterator's own fd
  family(out, "process_open_fds", "Number of open file descriptors.", "gauge", std::to_string(fds));
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    family(out, "process_max_fds", "Maximum number of open file descriptors.", "gauge",
           lim.rlim_cur == RLIM_INFINITY ? "+Inf" : std::to_string(lim.rlim_cur));
  return out;
}

}  // namespace bpfql
