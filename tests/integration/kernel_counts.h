// The kernel's own interrupt counters, read at moments a test picks: /proc/interrupts (calls by
// IRQ action name, all CPUs summed) and /proc/softirqs (runs by vector: "NET_RX"). Between two
// readings they bound what any tracer attached all that time saw, which is how tests of
// machine-wide events (hardirqs, softirqs) check counts that no workload fixes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bpfql::test {

using Counts = std::map<std::string, int64_t>;

struct CounterReading {
  Counts irqs;      // "virtio1-req.0" → calls (each handler of a shared line: all of the line's);
                    // the irq number too, as "#36" → calls
  Counts softirqs;  // "NET_RX" → runs
};

CounterReading read_counters();

// later - earlier, name by name (names only in `later` count from 0).
Counts counts_between(const Counts& earlier, const Counts& later);

// The names of the IRQs of the PCI device behind the block device that holds `path` (its
// msi_irqs folder in sysfs), e.g. {"virtio1-config", "virtio1-req.0"}; empty when there is none.
std::vector<std::string> disk_irq_names(const std::string& path);

// The hardware queues of that block device (its mq folder in sysfs); 0 when not blk-mq.
int disk_hw_queues(const std::string& path);

}  // namespace bpfql::test
