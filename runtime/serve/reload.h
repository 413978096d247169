// SIGHUP in `bpfql serve`: the query files are read again (a directory's *.yml anew), and the
// session (session.h, Reloader) swaps the programs. A query whose generated code and values are
// the same as before is unchanged: its maps' state carries over (runtime/load/carry_state.h), so
// its counters continue; a changed query starts from zero as a new one, a removed one is
// detached with the old program, a new one attached. A reload is all or nothing: when any query
// fails to check, load or attach, the old set keeps serving, the reason is logged, and
// bpfql_config_last_reload_successful turns 0 until a reload succeeds.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "runtime/serve/serve.h"
#include "runtime/session.h"

namespace bpfql {

// What compiling the query files gives: the Plan (prepared for serve), each query's fingerprint
// (by name: its code and values as generated alone), and the queries that failed.
struct CompiledQueries {
  Plan plan;
  std::map<std::string, std::string> fingerprints;
  std::vector<std::string> failed;   // not served (bpfql_query_up 0)
  std::vector<std::string> refused;  // failures that refuse the reload: new ones, or --strict
};
// Compiles the query files as they are now; nullopt (after the diagnostics) when none checks.
using QueryCompiler = std::function<std::optional<CompiledQueries>()>;

class ServeReloader final : public Reloader {
 public:
  ServeReloader(QueryCompiler compile, std::map<std::string, std::string> fingerprints,
                PrometheusOutput& output)
      : compile_(std::move(compile)), fingerprints_(std::move(fingerprints)), output_(output) {}

  std::unique_ptr<Plan> next_plan() override;
  std::map<size_t, size_t> unchanged(const Plan& current, const Plan& next) override;
  void reloaded(const Plan& next, const std::vector<std::string>& kept) override;
  void reload_failed(const std::string& why) override;

 private:
  QueryCompiler compile_;
  std::map<std::string, std::string> fingerprints_;  // of the queries running
  std::map<std::string, std::string> pending_;       // of the Plan being loaded
  PrometheusOutput& output_;
  std::vector<std::string> pending_failed_;
};

}  // namespace bpfql
