// Run-time indexes into kernel memory through BTF, on the real kernel: the file behind a
// descriptor the workload opened (curtask->files->fdt->fd[args.fd]), indexes past a fixed
// array's end and negative ones (the failed-read value, never the neighbouring member), and the
// library's fs/filetop side by side with a bpftrace rewrite on the same tracepoints.
#include <sys/resource.h>
#include <unistd.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

constexpr const char* kFileName = "bpfql-fd-table.txt";

// The workload appends 3 × 100 bytes to DIR/kFileName, then reads them back as 2 × 150.
std::vector<std::string> file_io_steps(const TempDir& dir) {
  std::string path = dir.file(kFileName);
  return {"file-write", "3", "100", path, "file-read", "2", "150", path};
}

}  // namespace

TEST_CASE("fd[args.fd]: the exact name of the file behind each read() and write() descriptor") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  TraceRun run = trace({.queries = {query_file("btf-fd-name.yml")}, .workload = file_io_steps(dir)});
  CHECK(run.status.exited_with(0));
  json rows = final_rows(run, "btf-fd-name");
  INFO(rows.dump());
  json writes = row_where(rows, {{"probe", "tracepoint:syscalls:sys_enter_write"}, {"file", kFileName}});
  CHECK(as_int(writes["calls"]) == 3);
  CHECK(as_int(writes["bytes"]) == 300);
  json reads = row_where(rows, {{"probe", "tracepoint:syscalls:sys_enter_read"}, {"file", kFileName}});
  CHECK(as_int(reads["calls"]) == 2);
  CHECK(as_int(reads["bytes"]) == 300);
}

TEST_CASE("an index past a fixed array's end, or a negative one, reads 0, not the next member") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  TraceRun run = trace({.queries = {query_file("btf-index-bounds.yml")},
                        .workload = file_io_steps(dir)});
  CHECK(run.status.exited_with(0));
  auto events = events_of(run, "btf-index-bounds");
  REQUIRE(events.size() == 2);  // the two reads of the file
  struct rlimit nofile {};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &nofile) == 0);  // the workload inherits the test's
  for (const json& e : events) {
    INFO(e.dump());
    CHECK(e["name"] == kFileName);
    // In bounds: pid_links[0] is linked (its pprev is set); rlim[7] is RLIMIT_NOFILE.
    CHECK(as_int(e["first_link"]) != 0);
    CHECK(static_cast<uint64_t>(as_int(e["nofile"])) == nofile.rlim_cur);
    // pid_links[4] is where thread_node lies, a list_head that is never NULL: not a byte of it
    // may show. rlim[16] and fd_array[fd + 64] are past their arrays too.
    CHECK(as_int(e["after_links"]) != 0);
    CHECK(as_int(e["past_links"]) == 0);
    CHECK(as_int(e["past_rlim"]) == 0);
    CHECK(as_int(e["past_fd_array"]) == 0);
    CHECK(as_int(e["negative"]) == 0);
  }
}

TEST_CASE("library fs/filetop side by side with bpftrace: reads, writes and bytes per file") {
  BPFQL_REQUIRE_ROOT();
  if (access(bpftrace_binary(), X_OK) != 0) {
    MESSAGE("skipped: no bpftrace");
    return;
  }
  TempDir dir;
  // The same four tracepoints and the same file, through pointer arithmetic: bpftrace 0.17
  // only takes literal indexes.
  const std::string file = "(*(curtask->files->fdt->fd + args->fd))";
  const std::string keep = file + "->f_inode->i_mode & 0xf000) == 0x8000";
  auto probe = [&](const std::string& tp, const std::string& what) {
    return "tracepoint:syscalls:" + tp + " /pid == $1 && (" + keep + "/ { @" + what + "[tid, str(" +
           file + "->f_path.dentry->d_name.name)] = count(); @" + what + "_bytes[tid, str(" + file +
           "->f_path.dentry->d_name.name)] = sum(args->count); } ";
  };
  std::vector<std::string> reference;
  ReferenceTool bt;
  TraceRun run = trace(
      {.queries = {"fs/filetop"},
       .workload = file_io_steps(dir),
       .pass_pid = false,
       .pid_option = true,
       .while_tracing_pid = [&](pid_t pid) {
         std::string program = "BEGIN { printf(\"ready\\n\"); } " +
                               probe("sys_enter_read", "r") + probe("sys_enter_pread64", "r") +
                               probe("sys_enter_write", "w") + probe("sys_enter_pwrite64", "w");
         bt.start({bpftrace_binary(), "-e", program, std::to_string(pid)}, "ready");
       },
       .after_workload = [&] { reference = bt.stop(); }});
  CHECK(run.status.exited_with(0));
  INFO("stderr:\n" << run.err << "bpftrace:\n" << lines_text(reference));
  // bpftrace's maps: "@r[TID, NAME]: N".
  std::map<std::tuple<std::string, int64_t, std::string>, int64_t> theirs;
  for (const std::string& line : reference) {
    if (line.empty() || line[0] != '@') continue;
    size_t open = line.find('['), comma = line.find(", "), close = line.find("]: ");
    if (open == std::string::npos || comma == std::string::npos || close == std::string::npos)
      continue;
    theirs[{line.substr(1, open - 1), std::stoll(line.substr(open + 1, comma - open - 1)),
            line.substr(comma + 2, close - comma - 2)}] = std::stoll(line.substr(close + 3));
  }
  std::map<std::tuple<std::string, int64_t, std::string>, int64_t> ours;
  int64_t rows_of_workload = 0;
  for (const json& record : intervals_of(run, "filetop"))
    for (const json& row : record["rows"]) {
      if (as_int(row["tid"]) != run.workload_pid) continue;
      ++rows_of_workload;
      std::string name = row["file"];
      int64_t tid = as_int(row["tid"]);
      CHECK(row["comm"] == "bpfql-wl");
      for (const auto& [column, map] : std::vector<std::pair<std::string, std::string>>{
               {"reads", "r"}, {"writes", "w"}, {"read_bytes", "r_bytes"}, {"write_bytes", "w_bytes"}})
        if (as_int(row[column]) != 0) ours[{map, tid, name}] += as_int(row[column]);
      CHECK(as_int(row["bytes"]) == as_int(row["read_bytes"]) + as_int(row["write_bytes"]));
    }
  CHECK(rows_of_workload >= 1);
  // The workload's regular-file I/O is exactly the known one, and bpftrace saw the same.
  int64_t tid = run.workload_pid;
  std::map<std::tuple<std::string, int64_t, std::string>, int64_t> expected = {
      {{"w", tid, kFileName}, 3}, {{"w_bytes", tid, kFileName}, 300},
      {{"r", tid, kFileName}, 2}, {{"r_bytes", tid, kFileName}, 300}};
  CHECK(ours == expected);
  CHECK(theirs == expected);
}

}  // namespace bpfql::test
