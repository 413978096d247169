#include "tests/integration/harness.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <doctest/doctest.h>

namespace bpfql::test {
namespace {

constexpr milliseconds kAttachTimeout{30000};
constexpr milliseconds kWorkloadTimeout{30000};
constexpr milliseconds kStopTimeout{30000};

std::vector<std::string> bpfql_command(const TraceSpec& spec, pid_t workload_pid) {
  std::vector<std::string> argv{BPFQL_BINARY, "run"};
  argv.insert(argv.end(), spec.queries.begin(), spec.queries.end());
  argv.insert(argv.end(), {"-f", spec.format});
  std::map<std::string, std::string> params = spec.params;
  if (spec.pass_pid) params.emplace("pid", std::to_string(workload_pid));
  for (const auto& [key, value] : params) argv.insert(argv.end(), {"-p", key + "=" + value});
  if (spec.pid_option) argv.insert(argv.end(), {"--pid", std::to_string(workload_pid)});
  argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  return argv;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::vector<json> parse_ndjson(const std::string& out) {
  std::vector<json> records;
  for (const std::string& line : split_lines(out)) {
    if (line.empty()) continue;
    INFO("stdout line: " << line);
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    REQUIRE_MESSAGE(!record.is_discarded(), "bpfql -f json printed a line that is not JSON");
    REQUIRE_MESSAGE(record.is_object(), "every NDJSON line must be an object");
    REQUIRE_MESSAGE(record.contains("query"), "every record must name its query");
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace

bool is_root() { return ::geteuid() == 0; }

TempDir::TempDir() {
  char templ[] = "/tmp/bpfql-it-XXXXXX";
  if (!::mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  std::string p = file(name);
  std::ofstream(p) << text;
  return p;
}

std::string query_file(const std::string& name) {
  return std::string(BPFQL_INTEGRATION_QUERY_DIR) + "/" + name;
}

std::string library_query(const std::string& name) {
  return std::string(BPFQL_QUERY_LIBRARY_DIR) + "/" + name + ".yml";
}

TraceRun trace(const TraceSpec& spec) {
  TraceRun run;
  std::vector<std::string> workload_argv{BPFQL_WORKLOAD};
  workload_argv.insert(workload_argv.end(), spec.workload.begin(), spec.workload.end());
  if (!spec.command.empty()) workload_argv = spec.command;
  Process workload = Process::spawn(workload_argv);
  run.workload_pid = workload.pid();

  std::vector<std::string> argv = bpfql_command(spec, workload.pid());
  INFO("command: " << joined(argv));
  Process bpfql = Process::spawn(argv);

  bool attached = bpfql.wait_for_stderr("Tracing", kAttachTimeout);
  if (!attached) bpfql.wait(milliseconds(2000));
  INFO("bpfql stderr:\n" << bpfql.err());
  INFO("bpfql stdout:\n" << bpfql.out());
  REQUIRE_MESSAGE(attached, "bpfql did not print 'Tracing' on stderr within 30 s ("
                                << (bpfql.running() ? "still running" : "it exited") << ")");
  if (spec.while_tracing) spec.while_tracing(bpfql);
  if (spec.while_tracing_pid) spec.while_tracing_pid(workload.pid());

  REQUIRE(workload.write_stdin("go\n"));
  std::optional<ExitStatus> workload_status = workload.wait(kWorkloadTimeout);
  INFO("workload stderr:\n" << workload.err());
  REQUIRE_MESSAGE(workload_status.has_value(), "the workload did not finish within 30 s");
  REQUIRE_MESSAGE(workload_status->exited_with(0), "workload " << workload_status->describe());
  run.workload_out = workload.out();
  if (spec.after_workload) spec.after_workload();

  if (spec.stop == Stop::Interrupt) bpfql.signal(spec.stop_signal);
  std::optional<ExitStatus> status = bpfql.wait(kStopTimeout);
  run.out = bpfql.out();
  run.err = bpfql.err();
  REQUIRE_MESSAGE(status.has_value(), "bpfql did not exit within 30 s of "
                                          << (spec.stop == Stop::Interrupt ? strsignal(spec.stop_signal) : "starting"));
  run.status = *status;
  if (spec.format == "json") run.records = parse_ndjson(run.out);
  return run;
}

std::vector<json> intervals_of(const TraceRun& run, const std::string& query) {
  std::vector<json> found;
  for (const json& r : run.records)
    if (r.value("query", "") == query && r.contains("rows")) found.push_back(r);
  return found;
}

json final_rows(const TraceRun& run, const std::string& query) {
  std::vector<json> prints = intervals_of(run, query);
  INFO("bpfql stdout:\n" << run.out << "\nbpfql stderr:\n" << run.err);
  REQUIRE_MESSAGE(!prints.empty(), "no aggregate record for query '" << query << "'");
  const json& last = prints.back();
  REQUIRE_MESSAGE(last["rows"].is_array(), "'rows' must be a list");
  return last["rows"];
}

std::vector<json> events_of(const TraceRun& run, const std::string& query) {
  std::vector<json> found;
  for (const json& r : run.records)
    if (r.value("query", "") == query && !r.contains("rows")) found.push_back(r);
  return found;
}

std::vector<json> events_of_pid(const TraceRun& run, const std::string& query) {
  std::vector<json> out;
  for (const json& e : events_of(run, query))
    if (as_int(e["pid"]) == run.workload_pid) out.push_back(e);
  return out;
}

json row_where(const json& rows, const json& match) {
  std::vector<json> hits;
  for (const json& row : rows) {
    bool all = true;
    for (const auto& [key, value] : match.items()) {
      if (!row.contains(key) || row[key] != value) all = false;
    }
    if (all) hits.push_back(row);
  }
  INFO("rows: " << rows.dump());
  REQUIRE_MESSAGE(hits.size() == 1, "expected exactly one row with " << match.dump() << ", found "
                                                                      << hits.size());
  return hits.front();
}

int64_t as_int(const json& value) {
  INFO("value: " << value.dump());
  REQUIRE_MESSAGE(value.is_number_integer(), "expected a JSON integer");
  return value.get<int64_t>();
}

double as_double(const json& value) {
  INFO("value: " << value.dump());
  REQUIRE_MESSAGE(value.is_number(), "expected a JSON number");
  return value.get<double>();
}

std::vector<int64_t> tracepoint_program_ids() {
  Completed listing = run_to_completion({BPFTOOL_BINARY, "prog", "list", "-j"}, milliseconds(20000));
  INFO("bpftool stderr: " << listing.err);
  REQUIRE_MESSAGE(listing.status.exited_with(0), "bpftool prog list failed: " << listing.status.describe());
  json programs = json::parse(listing.out, nullptr, false);
  REQUIRE_MESSAGE(programs.is_array(), "bpftool prog list -j did not print a JSON list");
  std::vector<int64_t> ids;
  for (const json& p : programs)
    if (p.value("type", "") == "tracepoint") ids.push_back(p.value("id", int64_t{-1}));
  return ids;
}

}  // namespace bpfql::test
