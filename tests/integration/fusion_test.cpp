// Fusion on the real kernel: queries of one run on the same tracepoint run in one BPF program
// (compiler/codegen/fusion.h). Each query must count exactly what it counts alone, and the
// kernel must hold one program on the tracepoint, not one per query.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"

namespace bpfql::test {
namespace {

using std::chrono::milliseconds;

// getppid 1000 (110), getpid 300 (39), reads of /dev/zero: syscalls of several numbers.
const std::vector<std::string> kWorkload = {"getppid", "1000", "getpid", "300", "read", "200", "7"};

// What `bpftool perf list` says process `pid` has attached: one "tracepoint:program id" per
// perf-event attach (ordinary tracepoints; raw ones are links, raw_tracepoints_held_by).
std::vector<std::string> perf_attaches_of(pid_t pid) {
  Completed listing = run_to_completion({BPFTOOL_BINARY, "perf", "list", "-j"}, milliseconds(20000));
  REQUIRE_MESSAGE(listing.status.exited_with(0), "bpftool perf list failed: " << listing.err);
  json all = json::parse(listing.out, nullptr, false);
  REQUIRE(all.is_array());
  std::vector<std::string> out;
  for (const json& p : all)
    if (p.value("pid", -1) == pid)
      out.push_back(p.value("tracepoint", std::string("?")) + ":" +
                    std::to_string(p.value("prog_id", int64_t{-1})));
  return out;
}

// Rows of a query's final print, as "key=count" lines keyed by its first column, sorted.
std::vector<std::string> counts(const TraceRun& run, const std::string& query,
                                const std::string& key) {
  std::vector<std::string> out;
  for (const json& row : final_rows(run, query)) {
    std::string k = row[key].is_string() ? row[key].get<std::string>() : row[key].dump();
    if (row.contains("tid")) k = "tid";  // the thread id differs from run to run
    out.push_back(k + "=" + std::to_string(as_int(row["calls"])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Alone {
  std::string file, query, key;
};
const std::vector<Alone> kQueries = {
    {"fuse-by-comm.yml", "fuse-by-comm", "comm"},
    {"fuse-by-tid.yml", "fuse-by-tid", "tid"},
    {"fuse-by-call.yml", "fuse-by-call", "call"},
};

TEST_CASE("three queries on raw_syscalls:sys_enter count together exactly what each counts alone") {
  BPFQL_REQUIRE_ROOT();
  REQUIRE_MESSAGE(std::string(BPFTOOL_BINARY) != "", "bpftool is needed (apt-get install bpftool)");
  std::map<std::string, std::vector<std::string>> alone;
  for (const auto& q : kQueries) {
    TraceRun run = trace({.queries = {query_file(q.file)}, .workload = kWorkload});
    REQUIRE(run.status.exited_with(0));
    alone[q.query] = counts(run, q.query, q.key);
  }
  // Exact numbers alone: the workload's 1000 getppid and 300 getpid (excluded by fuse-by-call).
  const auto& by_call = alone["fuse-by-call"];
  CHECK(std::count(by_call.begin(), by_call.end(), "getppid=1000") == 1);
  CHECK(std::none_of(by_call.begin(), by_call.end(),
                     [](const std::string& r) { return r.find("getpid") != std::string::npos; }));

  std::vector<std::string> perf, raw;
  std::vector<uint32_t> programs;
  std::vector<std::string> files;
  for (const auto& q : kQueries) files.push_back(query_file(q.file));
  TraceRun together = trace({.queries = files, .workload = kWorkload,
                             .while_tracing = [&](const Process& bpfql) {
                               perf = perf_attaches_of(bpfql.pid());
                               raw = raw_tracepoints_held_by(bpfql.pid());
                               programs = bpf_programs_held_by(bpfql.pid());
                             }});
  REQUIRE(together.status.exited_with(0));
  for (const auto& q : kQueries) {
    INFO("query " << q.query);
    CHECK(counts(together, q.query, q.key) == alone[q.query]);
  }
  // fuse-by-call reads the number, which sys_enter's raw tracepoint hands its programs: the
  // three run as one raw tracepoint program, and the kernel builds no record.
  INFO("bpftool perf list of bpfql: " << json(perf).dump());
  REQUIRE(perf.size() == 1);
  CHECK(perf[0].starts_with("sys_enter:"));
  CHECK(raw == std::vector<std::string>{"sys_enter"});
  CHECK(std::set<uint32_t>(programs.begin(), programs.end()).size() == 1);
}

TEST_CASE("queries that read no field fuse into one raw tracepoint program") {
  BPFQL_REQUIRE_ROOT();
  std::vector<std::string> raw;
  std::vector<uint32_t> programs;
  TraceRun run = trace({.queries = {query_file("fuse-by-comm.yml"), query_file("fuse-by-tid.yml")},
                        .workload = kWorkload,
                        .while_tracing = [&](const Process& bpfql) {
                          raw = raw_tracepoints_held_by(bpfql.pid());
                          programs = bpf_programs_held_by(bpfql.pid());
                        }});
  REQUIRE(run.status.exited_with(0));
  CHECK(raw == std::vector<std::string>{"sys_enter"});
  CHECK(std::set<uint32_t>(programs.begin(), programs.end()).size() == 1);
  // Each query still filters on its own: both see every call of the workload's one thread.
  json comm = final_rows(run, "fuse-by-comm");
  json tid = final_rows(run, "fuse-by-tid");
  REQUIRE(comm.size() == 1);
  REQUIRE(tid.size() == 1);
  CHECK(as_int(comm[0]["calls"]) == as_int(tid[0]["calls"]));
  CHECK(as_int(comm[0]["calls"]) >= 1000 + 300 + 200);
}

TEST_CASE("each fused query keeps its own filter: one that rejects everything counts nothing") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("fuse-getppid.yml"), query_file("fuse-by-call.yml"),
                                    query_file("fuse-by-comm.yml")},
                        .workload = kWorkload});
  REQUIRE(run.status.exited_with(0));
  json getppid = final_rows(run, "fuse-getppid");
  REQUIRE(getppid.size() == 1);
  CHECK(as_int(getppid[0]["calls"]) == 1000);
  json calls = final_rows(run, "fuse-by-call");
  CHECK(as_int(row_where(calls, {{"call", "getppid"}})["calls"]) == 1000);
  CHECK(as_int(row_where(calls, {{"call", "read"}})["calls"]) == 200);
}

TEST_CASE("fused bodies copying the same char[] field load (a stack key next to a plain key)") {
  BPFQL_REQUIRE_ROOT();
  std::vector<uint32_t> programs;
  TraceRun run = trace({.queries = {query_file("fuse-wakeup-comm.yml")},
                        .workload = {"nanosleep", "5", "5", "5", "5", "5", "5", "5", "5", "5", "5"},
                        .pass_pid = false,
                        .while_tracing = [&](const Process& bpfql) {
                          programs = bpf_programs_held_by(bpfql.pid());
                        }});
  REQUIRE_MESSAGE(run.status.exited_with(0), run.err);
  CHECK(std::set<uint32_t>(programs.begin(), programs.end()).size() == 1);
  // Both count every wakeup: the same events, so the same number for the workload's name.
  json wl = row_where(final_rows(run, "wakeups-by-comm"), {{"target", "bpfql-wl"}});
  int64_t stacked = 0;
  for (const json& row : final_rows(run, "wakeups-by-stack"))
    if (row["target"] == "bpfql-wl") stacked += as_int(row["wakeups"]);
  CHECK(as_int(wl["wakeups"]) >= 10);  // every sleep ends with a wakeup
  CHECK(stacked == as_int(wl["wakeups"]));
}

}  // namespace

// getppid 1000, close(-1) 300, 32-bit read(-1) 200 (32-bit number 3: close's 64-bit one), reads
// of 7 bytes 200.
const std::vector<std::string> kSyscallsWorkload = {"getppid", "1000", "close-bad", "300",
                                                    "ia32-read", "200", "read", "200", "7"};

// The tracepoints of perf_attaches_of()'s "tracepoint:program id" entries, sorted (one entry per
// program attached: a name twice is two programs there).
std::vector<std::string> tracepoints_of(const std::vector<std::string>& perf) {
  std::vector<std::string> out;
  for (const auto& p : perf) out.push_back(p.substr(0, p.find(':')));
  std::sort(out.begin(), out.end());
  return out;
}

int64_t calls_of(const TraceRun& run, const std::string& query, const std::string& column = "calls") {
  json rows = final_rows(run, query);
  REQUIRE_MESSAGE(rows.size() == 1, query << ": " << rows.dump());
  return as_int(rows[0][column]);
}

TEST_CASE("syscalls:* bodies run in the raw_syscalls programs: the same counts, no 32-bit calls, "
          "and no syscalls:* event attached") {
  BPFQL_REQUIRE_ROOT();
  REQUIRE_MESSAGE(std::string(BPFTOOL_BINARY) != "", "bpftool is needed (apt-get install bpftool)");
  const std::vector<std::string> moved = {"fuse-close.yml", "fuse-close-failed.yml",
                                          "fuse-read-span.yml"};
  // Alone, each on its own syscalls:* tracepoints.
  std::map<std::string, std::pair<int64_t, int64_t>> alone;
  for (const std::string& file : moved) {
    TraceRun run = trace({.queries = {query_file(file)}, .workload = kSyscallsWorkload});
    REQUIRE_MESSAGE(run.status.exited_with(0), run.err);
    std::string name = file.substr(0, file.size() - 4);
    std::string second = name == "fuse-close" ? "calls" : name == "fuse-read-span" ? "bytes" : "total";
    alone[name] = {calls_of(run, name), calls_of(run, name, second)};
  }
  CHECK(alone["fuse-close"].first == 300);  // the 32-bit calls are not close()s
  CHECK(alone["fuse-close-failed"] == std::pair<int64_t, int64_t>{300, -9 * 300});
  CHECK(alone["fuse-read-span"] == std::pair<int64_t, int64_t>{200, 7 * 200});

  std::vector<std::string> files = {query_file("fuse-by-call.yml"), query_file("fuse-exit-errors.yml")};
  for (const std::string& file : moved) files.push_back(query_file(file));
  // A second moved body on close's exit, after fuse-close-failed's: it tests the TS_COMPAT bit
  // that one read (the 32-bit reads pass close's number here).
  files.push_back(query_file("fuse-close-exits.yml"));
  // A third, whose filter reads comm: the three take it from one read (BPFQL_SHARED_COMM).
  files.push_back(query_file("fuse-close-named.yml"));
  std::vector<std::string> perf, raw;
  TraceRun together = trace({.queries = files, .workload = kSyscallsWorkload,
                             .while_tracing = [&](const Process& bpfql) {
                               perf = perf_attaches_of(bpfql.pid());
                               raw = raw_tracepoints_held_by(bpfql.pid());
                             }});
  REQUIRE_MESSAGE(together.status.exited_with(0), together.err);
  CHECK(calls_of(together, "fuse-close") == alone["fuse-close"].first);
  CHECK(calls_of(together, "fuse-close-failed") == alone["fuse-close-failed"].first);
  CHECK(calls_of(together, "fuse-close-failed", "total") == alone["fuse-close-failed"].second);
  CHECK(calls_of(together, "fuse-read-span") == alone["fuse-read-span"].first);
  CHECK(calls_of(together, "fuse-read-span", "bytes") == alone["fuse-read-span"].second);
  CHECK(calls_of(together, "fuse-close-exits") == 300);  // every close(-1), no 32-bit read
  CHECK(calls_of(together, "fuse-close-named") == 300);
  // The comm each key took from the shared read is the workload's.
  CHECK(final_rows(together, "fuse-close-failed")[0]["comm"] == "bpfql-wl");
  CHECK(final_rows(together, "fuse-close-exits")[0]["comm"] == "bpfql-wl");
  // raw_syscalls sees the 32-bit calls, under number 3: close.
  json by_call = final_rows(together, "fuse-by-call");
  CHECK(as_int(row_where(by_call, {{"call", "close"}})["calls"]) == 300 + 200);
  CHECK(as_int(row_where(by_call, {{"call", "read"}})["calls"]) == 200);
  CHECK(as_int(row_where(final_rows(together, "fuse-exit-errors"), {{"call", "close"}})["calls"]) ==
        300 + 200);
  // One program on each raw_syscalls tracepoint, and none on syscalls:*.
  INFO("bpftool perf list of bpfql: " << json(perf).dump());
  CHECK(tracepoints_of(perf) == std::vector<std::string>{"sys_enter", "sys_exit"});
  // As raw tracepoints: the moved bodies read their fields from the call's registers.
  std::sort(raw.begin(), raw.end());
  CHECK(raw == std::vector<std::string>{"sys_enter", "sys_exit"});
}

TEST_CASE("a syscalls:* query with no raw_syscalls query beside it keeps its own tracepoint") {
  BPFQL_REQUIRE_ROOT();
  REQUIRE_MESSAGE(std::string(BPFTOOL_BINARY) != "", "bpftool is needed (apt-get install bpftool)");
  std::vector<std::string> perf;
  TraceRun run = trace({.queries = {query_file("fuse-close.yml"), query_file("fuse-close-failed.yml")},
                        .workload = kSyscallsWorkload,
                        .while_tracing = [&](const Process& bpfql) {
                          perf = perf_attaches_of(bpfql.pid());
                        }});
  REQUIRE_MESSAGE(run.status.exited_with(0), run.err);
  CHECK(calls_of(run, "fuse-close") == 300);
  CHECK(calls_of(run, "fuse-close-failed") == 300);
  INFO("bpftool perf list of bpfql: " << json(perf).dump());
  CHECK(tracepoints_of(perf) == std::vector<std::string>{"sys_enter_close", "sys_exit_close"});
}

TEST_CASE("a streaming syscalls:* query moved into the raw_syscalls program prints each event once") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("opened.yml", R"(params:
  pid: {type: int}
queries:
  - name: opened
    probe: tracepoint:syscalls:sys_enter_openat
    where: pid == $pid
    select: [str(args.filename) as file, args.flags as flags]
  - name: calls
    probe: tracepoint:raw_syscalls:sys_enter
    where: pid == $pid
    select: count() as calls
    group_by: syscall(args.id) as call
)");
  std::string made = dir.file("made");
  std::vector<std::string> perf;
  TraceRun run = trace({.queries = {q}, .workload = {"openat", "9", made},
                        .while_tracing = [&](const Process& bpfql) {
                          perf = perf_attaches_of(bpfql.pid());
                        }});
  REQUIRE_MESSAGE(run.status.exited_with(0), run.err);
  std::vector<json> events = events_of(run, "opened");
  int64_t of_made = 0;
  for (const json& e : events)
    if (e["file"] == made) {
      ++of_made;
      CHECK(as_int(e["flags"]) == 0100);  // O_RDONLY|O_CREAT
    }
  CHECK(of_made == 9);
  CHECK(as_int(row_where(final_rows(run, "calls"), {{"call", "openat"}})["calls"]) >= 9);
  INFO("bpftool perf list of bpfql: " << json(perf).dump());
  REQUIRE(perf.size() == 1);
  CHECK(perf[0].starts_with("sys_enter:"));
}

// A query keyed by the system call's number alone counts numbers below 512 in an array slot
// and others in its hash (QueryLayout::slots); the slots are read as differences, never
// cleared, so the prints add up to every call, and a cumulative query keeps counting.
TEST_CASE("keyed by the system call's number: array slots and the hash add up to every call") {
  BPFQL_REQUIRE_ROOT();
  const std::vector<std::string> workload = {"getppid-paced", "400", "1000", "nosys", "250",
                                             "getpid", "300"};
  TraceRun run = trace({.queries = {query_file("calls-by-number.yml")}, .workload = workload});
  REQUIRE_MESSAGE(run.status.exited_with(0), run.err);
  std::vector<json> prints = intervals_of(run, "calls-by-number");
  INFO("stdout:\n" << run.out);
  CHECK(prints.size() >= 4);
  std::map<std::string, std::pair<int64_t, int64_t>> total;  // call -> calls, sum of ids
  for (const json& p : prints)
    for (const json& row : p["rows"]) {
      auto& t = total[row["call"].get<std::string>()];
      t.first += as_int(row["calls"]);
      t.second += as_int(row["ids"]);
      CHECK(as_int(row["calls"]) > 0);  // a slot that counted nothing is no row
      if (row["call"] == "getppid") CHECK(as_double(row["mean"]) == doctest::Approx(110));
    }
  CHECK(total["getppid"] == std::pair<int64_t, int64_t>{400, 400 * 110});
  CHECK(total["getpid"] == std::pair<int64_t, int64_t>{300, 300 * 39});
  CHECK(total["syscall_1000"] == std::pair<int64_t, int64_t>{250, 250 * 1000});  // the hash

  TraceRun kept = trace({.queries = {query_file("calls-by-number-cumulative.yml")},
                         .workload = workload});
  REQUIRE_MESSAGE(kept.status.exited_with(0), kept.err);
  std::vector<json> cumulative = intervals_of(kept, "calls-by-number-cumulative");
  INFO("stdout:\n" << kept.out);
  REQUIRE(cumulative.size() >= 4);
  int64_t previous = 0;
  for (const json& p : cumulative) {
    int64_t now = 0;  // a print before the first getppid has no row for it
    for (const json& row : p["rows"])
      if (row["call"] == "getppid") now = as_int(row["calls"]);
    CHECK(now >= previous);
    previous = now;
  }
  CHECK(previous == 400);
  json last = cumulative.back()["rows"];
  CHECK(as_int(row_where(last, {{"call", "getpid"}})["calls"]) == 300);
  CHECK(as_int(row_where(last, {{"call", "syscall_1000"}})["calls"]) == 250);
}

}  // namespace bpfql::test
