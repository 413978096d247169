// hardirqs and softirqs side by side with BCC's hardirqs-bpfcc and softirqs-bpfcc (both on the
// irq tracepoints, whose fields BCC lays out from tracefs: they run fine here), `-d -N`: a
// histogram in ns per IRQ name or vector. Interrupts are machine-wide and no workload fixes
// their number, so the tests compare what is robust. The workload drives what it can: fsync()ed
// writes (the disk's interrupt and BLOCK softirq, each round waiting for one at least) and UDP
// datagrams over loopback (a NET_RX run each): each tool counts at least that many. The kernel's
// own counters (/proc/interrupts, /proc/softirqs), read before and after each tool attached and
// detached, bound what each can have seen of each name, and how far apart the two can be.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/bcc_histogram.h"
#include "tests/integration/harness.h"
#include "tests/integration/histogram_compare.h"
#include "tests/integration/kernel_counts.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

const int64_t kRounds = 100;  // fsync rounds, and datagrams

// A file on a disk for the fsync rounds: /var/tmp, as /tmp may be a tmpfs (no disk, no
// interrupt), removed at scope exit.
class DiskFile {
 public:
  DiskFile() : path_("/var/tmp/bpfql-fsynced-" + std::to_string(::getpid())) {}
  ~DiskFile() { ::unlink(path_.c_str()); }
  DiskFile(const DiskFile&) = delete;
  DiskFile& operator=(const DiskFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The kernel's counters at the moments that bound each tool's window.
struct Readings {
  CounterReading before_bpfql, bpfql_attached, reference_attached, workload_done, bpfql_gone,
      reference_gone;
};

// Runs `query` and `reference` (a BCC tool) around the workload, reading the counters.
struct SideBySide {
  TraceRun run;
  std::vector<std::string> reference_out;
  Readings at;
};

SideBySide run_side_by_side(const std::string& query, const std::vector<std::string>& reference,
                            const DiskFile& file) {
  SideBySide s;
  ReferenceTool bcc;
  s.at.before_bpfql = read_counters();
  s.run = trace({.queries = {library_query(query)},
                 .workload = {"fsyncs", std::to_string(kRounds), file.path(), "udp-loop",
                              std::to_string(kRounds)},
                 .pass_pid = false,
                 .while_tracing = [&](const Process&) {
                   s.at.bpfql_attached = read_counters();
                   bcc.start(reference, "Hit Ctrl-C to end.");
                   s.at.reference_attached = read_counters();
                 },
                 .after_workload = [&] { s.at.workload_done = read_counters(); }});
  s.at.bpfql_gone = read_counters();
  s.reference_out = bcc.stop();
  s.at.reference_gone = read_counters();
  return s;
}

// Calls by name over every print. (Not checked against the rows' histograms: a print reads the
// count and the histogram one after the other while the programs run, so an event in between
// is in one and not the other, even in the final print.)
Counts bpfql_counts(const TraceRun& run, const std::string& query, const std::string& name_column) {
  Counts out;
  for (const json& print : intervals_of(run, query))
    for (const json& row : print["rows"]) out[row[name_column].get<std::string>()] += as_int(row["calls"]);
  return out;
}

Counts reference_counts(const std::vector<std::string>& lines, bool upper) {
  Counts out;
  for (const auto& [name, buckets] : bcc_histograms(lines)) {
    std::string n = name;
    if (upper) std::transform(n.begin(), n.end(), n.begin(), ::toupper);  // "net_rx" → "NET_RX"
    out[n] += total(buckets);
  }
  return out;
}

int64_t at(const Counts& c, const std::string& name) {
  auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

std::string counts_text(const Counts& c) {
  std::string out;
  for (const auto& [name, n] : c)
    if (name[0] != '#') out += name + "=" + std::to_string(n) + " ";
  return out;
}

// The kernel's counters bound each tool's count of each name from above: what happened while
// it may have been attached. Not from below: the kernel counts interrupts that no program on
// irq_handler_entry ran for (a third of the network card's transmit interrupts here, for
// bpftrace as for bpfql, with no recursion misses on the programs: the cause is not known), and
// a tracepoint's BPF programs are skipped, all of them at once, when its event comes while a
// BPF program already runs on the CPU. Both tools see the same events, so
// they agree but for what happened while only one may have been attached (from bpfql's start
// to the reference's attach, from the workload's end to the reference's exit), and those in
// flight at a reading (`slack`). `left_out`: what a reference leaves out, by name.
void check_within_kernel_counts(const Counts& ours, const Counts& theirs, const Readings& r,
                                const std::map<std::string, int64_t>& left_out, bool irqs) {
  auto pick = [irqs](const CounterReading& c) { return irqs ? c.irqs : c.softirqs; };
  Counts ours_at_most = counts_between(pick(r.before_bpfql), pick(r.bpfql_gone));
  Counts theirs_at_most = counts_between(pick(r.bpfql_attached), pick(r.reference_gone));
  Counts before = counts_between(pick(r.before_bpfql), pick(r.reference_attached));
  Counts after = counts_between(pick(r.workload_done), pick(r.reference_gone));
  const int64_t slack = 2;
  INFO("kernel, while bpfql may have been attached: " << counts_text(ours_at_most)
       << "\nkernel, while the reference may have been: " << counts_text(theirs_at_most)
       << "\nkernel, while one of them may not have been: " << counts_text(before) << "and "
       << counts_text(after));
  std::set<std::string> names;
  for (const auto& [name, n] : ours) names.insert(name);
  for (const auto& [name, n] : theirs) names.insert(name);
  for (const std::string& name : names) {
    INFO(name << ": bpfql " << at(ours, name) << ", reference " << at(theirs, name));
    CHECK(ours_at_most.count(name) + theirs_at_most.count(name) > 0);  // not a garbled name
    CHECK(at(ours, name) <= at(ours_at_most, name) + slack);
    CHECK(at(theirs, name) <= at(theirs_at_most, name) + slack);
    int64_t leaves_out = left_out.count(name) ? left_out.at(name) : 0;
    CHECK(std::llabs(at(ours, name) - at(theirs, name)) <=
          at(before, name) + at(after, name) + 2 * slack + leaves_out);
  }
}

TEST_CASE("hardirqs side by side with hardirqs-bpfcc: the disk's interrupts and every IRQ's count") {
  BPFQL_REQUIRE_ROOT();
  DiskFile file;
  std::vector<std::string> disk = disk_irq_names("/var/tmp");
  REQUIRE_MESSAGE(!disk.empty(), "no PCI device with MSI interrupts holds /var/tmp");
  SideBySide s = run_side_by_side("irq/hardirqs", {"/usr/sbin/hardirqs-bpfcc", "-d", "-N"}, file);
  INFO("stderr:\n" << s.run.err << "\nbpfql:\n" << s.run.out << "\nhardirqs-bpfcc:\n"
                   << lines_text(s.reference_out));
  REQUIRE_MESSAGE(s.run.status.exited_with(0), "bpfql " << s.run.status.describe());
  Counts ours = bpfql_counts(s.run, "hardirqs", "irq");
  Counts theirs = reference_counts(s.reference_out, false);
  int64_t our_disk = 0, their_disk = 0;
  for (const std::string& name : disk) our_disk += at(ours, name), their_disk += at(theirs, name);
  MESSAGE("hardirqs: the disk's (" << disk.size() << " IRQs) " << our_disk << " in bpfql, " << their_disk
          << " in hardirqs-bpfcc, for " << kRounds << " fsync rounds; bpfql " << counts_text(ours)
          << "; hardirqs-bpfcc " << counts_text(theirs));
  // Each round waits for a completion, and its interrupt comes before the waiter is woken,
  // which comes before the next round's write: one interrupt each at least.
  CHECK(our_disk >= kRounds);
  CHECK(their_disk >= kRounds);
  // hardirqs-bpfcc leaves out handler calls that returned IRQ_NONE (not this device's: a shared
  // line, or a virtqueue with nothing new); bpfql counts every call. The kernel counts them too.
  std::map<std::string, int64_t> none;
  for (const auto& [name, n] : ours)
    none[name] = std::max<int64_t>(2, n / 20);
  check_within_kernel_counts(ours, theirs, s.at, none, true);
}

TEST_CASE("softirqs side by side with softirqs-bpfcc: NET_RX and BLOCK runs, and every vector's count") {
  BPFQL_REQUIRE_ROOT();
  DiskFile file;
  SideBySide s = run_side_by_side("irq/softirqs", {"/usr/sbin/softirqs-bpfcc", "-d", "-N"}, file);
  INFO("stderr:\n" << s.run.err << "\nbpfql:\n" << s.run.out << "\nsoftirqs-bpfcc:\n"
                   << lines_text(s.reference_out));
  REQUIRE_MESSAGE(s.run.status.exited_with(0), "bpfql " << s.run.status.describe());
  Counts ours = bpfql_counts(s.run, "softirqs", "vec");
  Counts theirs = reference_counts(s.reference_out, true);
  MESSAGE("softirqs, for " << kRounds << " datagrams and fsync rounds: bpfql " << counts_text(ours)
          << "; softirqs-bpfcc " << counts_text(theirs));
  // Each datagram is delivered by a NET_RX run before recv() returns and the next is sent.
  CHECK(at(ours, "NET_RX") >= kRounds);
  CHECK(at(theirs, "NET_RX") >= kRounds);
  // A disk with one hardware queue on a machine of more CPUs completes each request in a BLOCK
  // run (blk_mq_complete_request_remote), and each round waits for one; with a queue per CPU a
  // request may complete in the interrupt.
  if (disk_hw_queues("/var/tmp") == 1 && ::sysconf(_SC_NPROCESSORS_ONLN) > 1) {
    CHECK(at(ours, "BLOCK") >= kRounds);
    CHECK(at(theirs, "BLOCK") >= kRounds);
  }
  // Every vector the kernel ran while both were attached is in both, each count within the
  // kernel's bounds (softirq_entry fires exactly where /proc/softirqs counts).
  check_within_kernel_counts(ours, theirs, s.at, {}, false);
}

}  // namespace
}  // namespace bpfql::test
