// What a bpfql process leaves in the kernel, read without bpftool: the BPF programs a process
// holds (from its fds' fdinfo), whether a program id is still loaded (the bpf syscall), and the
// kprobe/uprobe events in tracefs. The fault tests check that every way a run ends leaves none.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bpfql::test {

// Ids of the BPF programs process `pid` holds an fd to (/proc/PID/fdinfo "prog_id:").
std::vector<uint32_t> bpf_programs_held_by(pid_t pid);

// Ids of the BPF maps process `pid` holds an fd to (/proc/PID/fdinfo "map_id:").
std::vector<uint32_t> bpf_maps_held_by(pid_t pid);

// The tracepoint names of the raw tracepoint links process `pid` holds (fdinfo "tp_name:" of
// its fds with "link_type: raw_tracepoint").
std::vector<std::string> raw_tracepoints_held_by(pid_t pid);

// Whether program `id` is still loaded (BPF_PROG_GET_FD_BY_ID).
bool bpf_program_loaded(uint32_t id);

// The ids of `ids` still loaded after waiting up to `timeout` for them to go (the kernel frees a
// closed program after an RCU grace period; bpfql's detach helper holds them ~70 ms per probe).
std::vector<uint32_t> still_loaded(const std::vector<uint32_t>& ids, std::chrono::milliseconds timeout);

// Lines of uprobe_events and kprobe_events (every tracefs mount that has them) that contain
// `needle` (libbcc and bpfql name their events after the creating process's pid).
std::vector<std::string> probe_events_containing(const std::string& needle);

// The hex mask of a "Cap...:" line in /proc/PID/status, and the value of "NoNewPrivs:".
uint64_t status_mask(pid_t pid, const std::string& field);
std::string status_field(pid_t pid, const std::string& field);

}  // namespace bpfql::test
