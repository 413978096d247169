// The library's mm/cachestat on the real kernel: a read of a file whose pages the test dropped
// from the page cache, and a write of a new file, add exactly their bytes to the page cache, in
// the workload; the write dirties its folios. Side by side with a bpftrace program on the same
// tracepoints (BCC's cachestat needs kprobes, which this kernel lacks).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

constexpr int64_t kChunk = 65536, kChunks = 16, kFileBytes = kChunk * kChunks;  // 1 MiB

// PATH holds kFileBytes on disk and none of them in the page cache.
void write_uncached(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  std::string chunk(kChunk, 'x');
  for (int64_t i = 0; i < kChunks; ++i) REQUIRE(::write(fd, chunk.data(), chunk.size()) == kChunk);
  REQUIRE(::fsync(fd) == 0);  // clean pages: the only ones POSIX_FADV_DONTNEED drops
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  ::close(fd);
}

// "@name: N" of a bpftrace map without keys; -1 when absent.
int64_t bpftrace_scalar(const std::vector<std::string>& lines, const std::string& name) {
  for (const std::string& line : lines)
    if (line.rfind(name + ": ", 0) == 0) return std::stoll(line.substr(name.size() + 2));
  return -1;
}

}  // namespace

TEST_CASE(
    "mm/cachestat side by side with bpftrace: a cold read and a new file's write add their bytes") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string cold = dir.file("cold.bin"), fresh = dir.file("new.bin");
  write_uncached(cold);
  const std::string chunks = std::to_string(kChunks), chunk = std::to_string(kChunk);
  ReferenceTool bt;
  TraceRun run =
      trace({.queries = {library_query("mm/cachestat")},
             .workload = {"file-read", chunks, chunk, cold, "file-write", chunks, chunk, fresh},
             .while_tracing_pid = [&](pid_t pid) {
               std::string p = std::to_string(pid);
               bt.start(bpftrace_e("tracepoint:filemap:mm_filemap_add_to_page_cache /pid == " + p +
                                   "/ { @folios = count(); @bytes = sum(4096 << args->order); } "
                                   "tracepoint:writeback:writeback_dirty_folio /pid == " +
                                   p + "/ { @dirtied = count(); }"),
                        "ready");
             }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n"
       << run.err << "\nbpfql:\n"
       << run.out << "\nbpftrace:\n"
       << lines_text(reference));
  REQUIRE(run.status.exited_with(0));
  int64_t folios = 0, bytes = 0, dirtied = 0;
  for (const json& print : intervals_of(run, "pagecache-added"))
    for (const json& row : print["rows"]) {
      CHECK(row["comm"] == "bpfql-wl");
      folios += as_int(row["folios"]);
      bytes += as_int(row["bytes"]);
    }
  for (const json& print : intervals_of(run, "pagecache-dirtied"))
    for (const json& row : print["rows"]) dirtied += as_int(row["folios"]);
  // Every byte read from disk and every byte of the new file entered the page cache once, in
  // folios of one page or more; the write dirtied each of its folios (no writeback in between:
  // a folio dirtied again while dirty is not counted again). The workload may add a stray page
  // or two of its own besides (a CI run on a fresh clone: 2 MiB + 8 KiB, bpftrace the same, a
  // page of its binary or a library read in from disk): exact equality is with bpftrace, below.
  constexpr int64_t kStray = 16 * 4096;
  CHECK(bytes >= 2 * kFileBytes);
  CHECK(bytes <= 2 * kFileBytes + kStray);
  CHECK(folios >= 2);
  CHECK(folios <= (2 * kFileBytes + kStray) / 4096);
  CHECK(dirtied >= 1);
  CHECK(dirtied <= kFileBytes / 4096);
  CHECK(bpftrace_scalar(reference, "@bytes") == bytes);
  CHECK(bpftrace_scalar(reference, "@folios") == folios);
  CHECK(bpftrace_scalar(reference, "@dirtied") == dirtied);
}

}  // namespace bpfql::test
