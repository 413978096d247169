// report: open on the real kernel: mm/memleak-outstanding lists the blocks the workload still
// holds and their bytes (malloc's size, `entry.arg0` captured at the span's begin), by
// allocating user stack, at the interval prints while it holds them and at the final print; and
// the same workload under BCC's memleak-bpfcc shows the same allocations and bytes by stack.
// memleak-bpfcc cannot attach beside bpfql (python3-bpfcc 0.26 passes a garbage ref_ctr_offset
// to bpf_attach_uprobe, and the kernel refuses a second uprobe at malloc with another one:
// "ref_ctr_offset mismatch"), so it traces its own run of the same steps, whose allocations by
// these two call sites are exactly the same.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

// 50 blocks of 4321 bytes from bpfql_wl_malloc, 20 of 1000 from bpfql_wl_malloc_other, the
// first 35 freed (all bpfql_wl_malloc's): 15 held from one (64815 bytes), 20 from the other
// (20000 bytes), for the `hold` ms the last step sleeps.
std::vector<std::string> steps(const char* hold) {
  return {"malloc", "50", "4321", "malloc-other", "20", "1000", "free", "35", "sleep", hold};
}

// The allocating call site a row's stack begins at: 'A' (bpfql_wl_malloc), 'B'
// (bpfql_wl_malloc_other), or 0 (any other malloc of the process: libc's own).
char site_of(const json& stack) {
  if (!stack.is_array() || stack.empty()) return 0;
  std::string top = stack[0].get<std::string>();
  if (top.starts_with("bpfql_wl_malloc_other+")) return 'B';
  if (top.starts_with("bpfql_wl_malloc+")) return 'A';
  return 0;
}

struct Held {
  int64_t a = -1, b = -1;  // blocks from each site; -1: no row
  int64_t bytes_a = -1, bytes_b = -1;
  int64_t oldest_a = -1, oldest_b = -1;
};

Held held_in(const json& rows) {
  Held h;
  for (const json& row : rows) {
    char site = site_of(row["stack"]);
    if (!site) continue;
    CHECK(row["comm"] == "bpfql-wl");
    (site == 'A' ? h.a : h.b) = as_int(row["blocks"]);
    (site == 'A' ? h.bytes_a : h.bytes_b) = as_int(row["bytes"]);
    (site == 'A' ? h.oldest_a : h.oldest_b) = as_int(row["oldest"]);
  }
  return h;
}

}  // namespace

TEST_CASE("memleak-outstanding: blocks still held by allocating stack, at interval prints and at the end") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {library_query("mm/memleak-outstanding")},
                        .workload = steps("1500"),
                        .pass_pid = false,
                        .pid_option = true,
                        .extra_args = {"--interval", "200ms"}});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  std::vector<json> prints = intervals_of(run, "memleak-outstanding");
  REQUIRE(prints.size() >= 2);
  // Every print: never more than were allocated, nothing dropped; `oldest` is in ns.
  bool held_while_running = false;
  for (size_t i = 0; i < prints.size(); ++i) {
    CAPTURE(i);
    CHECK(as_int(prints[i]["dropped"]) == 0);
    Held h = held_in(prints[i]["rows"]);
    CHECK(h.a <= 50);
    CHECK(h.b <= 20);
    // A print during the 1.5 s the workload holds them (it prints every 200 ms): exactly these.
    if (i + 1 < prints.size() && h.a == 15 && h.b == 20) {
      held_while_running = true;
      CHECK(h.bytes_a == 15 * 4321);
      CHECK(h.bytes_b == 20 * 1000);
    }
    // Whatever a print caught, each block counts its own size: every malloc of a site asks the
    // same (a size from another call would show here).
    if (h.a >= 0) CHECK(h.bytes_a == h.a * 4321);
    if (h.b >= 0) CHECK(h.bytes_b == h.b * 1000);
  }
  CHECK(held_while_running);
  CHECK(prints.back()["units"]["oldest"] == "ns");
  // The final print, after the workload exited holding them: the same blocks, each held at
  // least the 1.5 s it slept.
  Held last = held_in(prints.back()["rows"]);
  CHECK(last.a == 15);
  CHECK(last.b == 20);
  CHECK(last.bytes_a == 15 * 4321);
  CHECK(last.bytes_b == 20 * 1000);
  CHECK(last.oldest_a >= 1'500'000'000);
  CHECK(last.oldest_b >= 1'500'000'000);
}

namespace {

// memleak-bpfcc's last print's "N bytes in M allocations from stack" per call site.
struct BccHeld {
  int64_t blocks_a = -1, bytes_a = -1, blocks_b = -1, bytes_b = -1;
};

BccHeld last_bcc_print(const std::vector<std::string>& lines) {
  BccHeld last, current;
  int64_t bytes = -1, blocks = -1;
  for (const std::string& line : lines) {
    if (line.find("Top 10 stacks with outstanding allocations") != std::string::npos) {
      if (current.blocks_b >= 0) last = current;
      current = BccHeld{};
      continue;
    }
    std::vector<std::string> w = split_words(line);
    if (w.size() >= 5 && w[1] == "bytes" && w[2] == "in" && w[4] == "allocations") {
      bytes = std::stoll(w[0]);
      blocks = std::stoll(w[3]);
    } else if (line.find("bpfql_wl_malloc_other+") != std::string::npos && blocks >= 0) {
      current.blocks_b = blocks;
      current.bytes_b = bytes;
      blocks = -1;
    } else if (line.find("bpfql_wl_malloc+") != std::string::npos && blocks >= 0) {
      current.blocks_a = blocks;
      current.bytes_a = bytes;
      blocks = -1;
    }
  }
  if (current.blocks_b >= 0) last = current;
  return last;
}

}  // namespace

TEST_CASE("memleak-outstanding beside memleak-bpfcc's outstanding allocations (its own run)") {
  BPFQL_REQUIRE_ROOT();
  // memleak-bpfcc on one run of the steps, stopped while the workload still holds the blocks
  // (its stack symbols come from the live process).
  Process workload = Process::spawn([] {
    std::vector<std::string> argv{BPFQL_WORKLOAD};
    for (const std::string& s : steps("3000")) argv.push_back(s);
    return argv;
  }());
  ReferenceTool bcc;
  bcc.start({"/usr/sbin/memleak-bpfcc", "-p", std::to_string(workload.pid()), "-O",
             "/lib/x86_64-linux-gnu/libc.so.6", "1"},
            "Top 10 stacks with outstanding allocations");
  REQUIRE(workload.write_stdin("go\n"));
  // Two prints that show the second site: the last of them comes a second after the first,
  // when the steps (microseconds) are long done and the workload sleeps.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto shown = [&] {
    size_t n = 0;
    for (size_t at = bcc.out().find("bpfql_wl_malloc_other+"); at != std::string::npos;
         at = bcc.out().find("bpfql_wl_malloc_other+", at + 1))
      ++n;
    return n;
  };
  while (shown() < 2 && std::chrono::steady_clock::now() < deadline) {
    bcc.pump(std::chrono::milliseconds(100));
  }
  std::vector<std::string> reference = bcc.stop();
  INFO("memleak-bpfcc:\n" << lines_text(reference) << "stderr:\n" << bcc.err());
  REQUIRE(workload.wait(std::chrono::milliseconds(30000)).has_value());
  BccHeld bcc_held = last_bcc_print(reference);
  CHECK(bcc_held.blocks_a == 15);
  CHECK(bcc_held.bytes_a == 15 * 4321);
  CHECK(bcc_held.blocks_b == 20);
  CHECK(bcc_held.bytes_b == 20 * 1000);

  // bpfql on another run of the same steps: the same blocks by the same call sites. (It prints
  // while the workload lives: a user stack is symbolized from the live process's memory map,
  // which is gone once it has exited.)
  TraceRun run = trace({.queries = {library_query("mm/memleak-outstanding")},
                        .workload = steps("1000"),
                        .pass_pid = false,
                        .pid_option = true,
                        .extra_args = {"--interval", "200ms"}});
  INFO("bpfql stderr:\n" << run.err << "stdout:\n" << run.out);
  Held ours = held_in(final_rows(run, "memleak-outstanding"));
  CHECK(ours.a == bcc_held.blocks_a);
  CHECK(ours.b == bcc_held.blocks_b);
  CHECK(ours.bytes_a == bcc_held.bytes_a);
  CHECK(ours.bytes_b == bcc_held.bytes_b);
}

}  // namespace bpfql::test

namespace bpfql::test {

TEST_CASE("report: open keeps max_entries open spans; the begins beyond are dropped and counted") {
  BPFQL_REQUIRE_ROOT();
  // 50 blocks held, room for 10: the first 10 are open, at least the other 40 begins dropped
  // (libc's own mallocs at exit, with the hash full, are dropped too).
  TraceRun run = trace({.queries = {query_file("open-spans-capacity.yml")},
                        .workload = {"malloc", "50", "64", "sleep", "600"},
                        .pass_pid = false,
                        .pid_option = true,
                        .extra_args = {"--interval", "200ms"}});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  std::vector<json> prints = intervals_of(run, "open-spans-capacity");
  REQUIRE(!prints.empty());
  int64_t dropped = 0;
  for (const json& p : prints) dropped += as_int(p["dropped"]);
  CHECK(dropped >= 40);
  int64_t open = 0, ours = 0;
  for (const json& row : prints.back()["rows"]) {
    open += as_int(row["blocks"]);
    if (row["stack"].is_array() && !row["stack"].empty() &&
        row["stack"][0].get<std::string>().starts_with("bpfql_wl_malloc+"))
      ours += as_int(row["blocks"]);
  }
  CHECK(open == 10);
  CHECK(ours == 10);
}

}  // namespace bpfql::test
