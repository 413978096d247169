// `bpfql kernel export [--for QUERIES...] [-o FILE]`: this kernel as a snapshot file
// (runtime/kernel/kernel_snapshot.h), whole or only what some queries need.
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/library_rules.h"
#include "runtime/kernel/recording_catalog.h"
#include "runtime/kernel/snapshot_export.h"

namespace bpfql {
namespace {

// Checks the queries through a recording catalog: what they asked of the kernel, or the exit
// status after their errors (a query that does not check here cannot say what it needs).
std::expected<SnapshotSelection, int> select_for(const std::vector<std::string>& queries,
                                                 const TracefsCatalog& live) {
  auto library = library_files(queries);
  if (!library) {
    std::cerr << format_diagnostic(library.error(), "");
    return std::unexpected(2);
  }
  RecordingCatalog recording(live);
  bool failed = false;
  for (const LibraryFile& file : library->files) {
    PipelineInput input;
    input.files_or_names = {file.path};
    failed = check_each_file(input, recording).failed || failed;
  }
  if (failed) {
    std::cerr << "bpfql: kernel export --for: the queries above do not check on this kernel\n";
    return std::unexpected(2);
  }
  return SnapshotSelection{queries, recording.tracepoints_used(), recording.structs_used()};
}

}  // namespace

int command_kernel_export(const std::vector<std::string>& for_queries, const std::string& output) {
  TracefsCatalog live;
  if (!live.tracefs_problem().empty()) {
    std::cerr << "bpfql: " << live.tracefs_problem() << "\n";
    return 1;
  }
  std::optional<SnapshotSelection> selection;
  if (!for_queries.empty()) {
    auto selected = select_for(for_queries, live);
    if (!selected) return selected.error();
    selection = std::move(*selected);
  }
  auto snapshot = export_running_kernel(live, selection ? &*selection : nullptr);
  if (!snapshot) {
    std::cerr << "bpfql: " << snapshot.error().message << "\n";
    return 1;
  }
  std::string text = encode_snapshot(*snapshot);
  if (output.empty() || output == "-") {
    std::cout << text;
    return std::cout.flush() ? 0 : 1;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) {
    std::cerr << fmt::format("bpfql: cannot write '{}': {}\n", output, std::strerror(errno));
    return 1;
  }
  std::cerr << fmt::format("bpfql: wrote {} ({} tracepoints, {} of BTF, kernel {})\n", output,
                           snapshot->tracepoint_formats.size(),
                           snapshot->btf.empty() ? "no bytes"
                                                 : fmt::format("{} bytes", snapshot->btf.size()),
                           snapshot->release);
  return 0;
}

}  // namespace bpfql
