// Name functions: the numbers operators meet, shown as the names they have (signal(),
// tcp_state(), open_flags(), task_state(), ip(), cgroup_path(), disk(), softirq(), irq(),
// symbolic()).
// Each returns text for every value, so a column is always names (an unknown value is its
// number as text), never a mix of numbers and names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bpfql {

std::string signal_text(int64_t sig);           // 9 → "SIGKILL", 35 → "SIGRTMIN+1"
std::string tcp_state_text(uint64_t state);     // 1 → "ESTABLISHED"
std::string open_flags_text(uint64_t flags);    // 02101 → "O_WRONLY|O_CREAT|O_APPEND"
std::string task_state_text(uint64_t state);    // 0 → "R", 1 → "S", 2 → "D", 0x100 → "R+"
std::string ipv4_int_text(uint64_t addr);       // a __be32 as loaded on x86: 0x0100007f → "127.0.0.1"
std::string capability_text(uint64_t cap);  // 21 → "CAP_SYS_ADMIN"
std::string softirq_text(uint64_t vec);         // 3 → "NET_RX"
// A hardware IRQ number → the names of its handlers, as /sys/kernel/irq/N/actions lists them
// (the `name` irq:irq_handler_entry shows; handlers of a shared IRQ joined by ","): 41 →
// "virtio3-rx". An IRQ without handlers (or none of that number) prints as its number.
std::string irq_text(uint64_t irq);
// The same, read below `irq_root` (a directory laid out as /sys/kernel/irq); not cached.
std::string irq_text_in(const std::string& irq_root, uint64_t irq);
std::string errno_text(int64_t value);          // -2 → "ENOENT", 3 → "3"
// The cgroup v2 path of a cgroup id (bpf_get_current_cgroup_id): "/system.slice/x.service",
// "/" for the root; "cgroup:ID" when no cgroup of that id exists (any more).
std::string cgroup_path_text(uint64_t id);
// A kernel dev_t (major << 20 | minor) → the block device's name ("vda", "sda1"), else "MAJ:MIN".
std::string disk_text(uint64_t dev);
// A print fmt table (__print_symbolic, or __print_flags when `flags`) applied to a value.
std::string symbolic_text(uint64_t value, const std::vector<std::pair<uint64_t, std::string>>& table,
                          bool flags);

}  // namespace bpfql
