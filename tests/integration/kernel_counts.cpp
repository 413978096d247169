#include "tests/integration/kernel_counts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bpfql::test {
namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A numbered line of /proc/interrupts: "  36:    0  251261  PCI-MSIX-0000:00:02.0   1-edge
// virtio1-req.0": the per-CPU counts summed, and the action name after the chip and hardware irq
// columns. A shared IRQ ("acpi, i801_smbus") calls each of its handlers on each interrupt, so
// each name counts them all. Lines without a number (NMI:, LOC:, ...) are not irq_handler_entry
// events and are left out.
struct IrqLine {
  std::string number;
  std::vector<std::string> names;
  int64_t calls = 0;
};

std::vector<IrqLine> read_interrupts() {
  std::vector<IrqLine> out;
  std::ifstream in("/proc/interrupts");
  std::string line;
  std::getline(in, line);  // "CPU0 CPU1 ...": one count column each
  int cpus = 0;
  {
    std::istringstream words(line);
    for (std::string w; words >> w;) ++cpus;
  }
  while (std::getline(in, line)) {
    std::istringstream words(line);
    IrqLine irq;
    words >> irq.number;
    if (irq.number.empty() || irq.number.back() != ':') continue;
    irq.number.pop_back();
    if (!all_digits(irq.number)) continue;
    for (int c = 0; c < cpus; ++c) {
      std::string n;
      words >> n;
      if (all_digits(n)) irq.calls += std::stoll(n);
    }
    std::vector<std::string> rest;  // chip, hardware irq, the action name(s)
    for (std::string w; words >> w;) rest.push_back(w);
    for (size_t i = 2; i < rest.size(); ++i) {
      std::string name = rest[i];
      if (!name.empty() && name.back() == ',') name.pop_back();
      if (!name.empty()) irq.names.push_back(name);
    }
    out.push_back(irq);
  }
  return out;
}

// "      NET_RX:      15092      15349"
Counts read_softirqs() {
  Counts out;
  std::ifstream in("/proc/softirqs");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (name.empty() || name.back() != ':') continue;
    name.pop_back();
    int64_t sum = 0;
    for (std::string n; words >> n;)
      if (all_digits(n)) sum += std::stoll(n);
    out[name] = sum;
  }
  return out;
}

}  // namespace

CounterReading read_counters() {
  CounterReading r;
  for (const IrqLine& irq : read_interrupts()) {
    r.irqs["#" + irq.number] = irq.calls;
    for (const std::string& name : irq.names) r.irqs[name] += irq.calls;
  }
  r.softirqs = read_softirqs();
  return r;
}

Counts counts_between(const Counts& earlier, const Counts& later) {
  Counts out;
  for (const auto& [name, n] : later) {
    auto e = earlier.find(name);
    out[name] = n - (e == earlier.end() ? 0 : e->second);
  }
  return out;
}

namespace {

// /sys/devices/.../block/vda (or .../vda/vda1) of the file system that holds `path`; "" if none.
std::filesystem::path block_device_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  std::error_code ec;
  std::filesystem::path dev = std::filesystem::canonical(
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)), ec);
  return ec ? std::filesystem::path{} : dev;
}

}  // namespace

int disk_hw_queues(const std::string& path) {
  std::filesystem::path dev = block_device_of(path);
  std::error_code ec;
  if (!dev.empty() && !std::filesystem::is_directory(dev / "mq", ec)) dev = dev.parent_path();  // a partition
  if (dev.empty() || !std::filesystem::is_directory(dev / "mq", ec)) return 0;
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dev / "mq", ec))
    if (entry.is_directory()) ++n;
  return n;
}

std::vector<std::string> disk_irq_names(const std::string& path) {
  std::filesystem::path dev = block_device_of(path);
  std::error_code ec;
  if (dev.empty()) return {};
  // Up from the block device (…/0000:00:02.0/virtio1/block/vda) to the PCI device with its
  // interrupt numbers.
  for (; dev.has_relative_path(); dev = dev.parent_path()) {
    if (!std::filesystem::is_directory(dev / "msi_irqs", ec)) continue;
    std::vector<std::string> names;
    std::vector<IrqLine> irqs = read_interrupts();
    for (const auto& entry : std::filesystem::directory_iterator(dev / "msi_irqs", ec))
      for (const IrqLine& irq : irqs)
        if (irq.number == entry.path().filename().string())
          names.insert(names.end(), irq.names.begin(), irq.names.end());
    return names;
  }
  return {};
}

}  // namespace bpfql::test
