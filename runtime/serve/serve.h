// `bpfql serve`: runs a Plan as a Prometheus exporter. The session (session.h) drives the loop as
// for `run`; its Output renders each refresh to Prometheus text (render/prometheus.h) and
// publishes it to the HTTP listener (http_exporter.h), which answers GET /metrics from its own
// thread with the last published text.
//
// Serving changes a Plan in three ways (prepare_serve_plan): every query is cumulative (maps
// are never cleared, so counters only grow), has no row limit (every key is exported), and has a
// refresh interval (--interval, else the query's own, else kDefaultServeInterval).
#pragma once

#include <cstdint>
#include <memory>

#include "compiler/plan.h"
#include "runtime/collect/output.h"
#include "runtime/render/prometheus.h"
#include "runtime/serve/http_exporter.h"
#include "runtime/session.h"

namespace bpfql {

inline constexpr uint64_t kDefaultServeInterval = 1'000'000'000;  // ns

void prepare_serve_plan(Plan& plan);

// The Output of a serve run: keeps each query's latest result, renders them all on flush() and
// publishes the text to `exporter`; started() starts the listener's thread (after attach and the
// privilege drop, whose credentials its threads inherit).
class PrometheusOutput final : public Output {
 public:
  PrometheusOutput(const Plan& plan, HttpExporter& exporter);
  void interval(const IntervalResult& result) override;
  void event(const StreamRow&) override {}  // serve rejects streaming queries before this
  void events_not_printed(const PlanQuery&, uint64_t) override {}
  void flush() override;
  void started() override;

 private:
  PrometheusRenderer renderer_;
  HttpExporter& exporter_;
  std::vector<IntervalResult> latest_;  // per query in Plan order; rows dropped once rendered
  std::vector<std::string> texts_;      // per query in Plan order: its rendered families
  bool attached_ = false;
};

// Runs `plan` (already prepared) until a signal or stop_after; returns the exit status as
// run_plan does. `exporter` is bound; its listener runs while the probes are attached.
int serve_plan(const Plan& plan, HttpExporter& exporter, RunOptions options);

}  // namespace bpfql
