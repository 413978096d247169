// `bpfql serve` on top of the run session (see serve.h).
#include "runtime/serve/serve.h"

#include <iostream>

namespace bpfql {

void prepare_serve_plan(Plan& plan) {
  for (auto& q : plan.queries) {
    q.cumulative = true;
    q.limit = 0;
    if (!q.interval_ns || *q.interval_ns == 0) q.interval_ns = kDefaultServeInterval;
  }
}

PrometheusOutput::PrometheusOutput(const Plan& plan, HttpExporter& exporter)
    : renderer_(plan), exporter_(exporter), texts_(plan.queries.size()) {
  flush();
}

// Each query is rendered once per read; flush() only joins the texts (the session flushes after
// every query's print, so rendering everything there would repeat the work per query).
void PrometheusOutput::interval(const IntervalResult& result) {
  int i = renderer_.query_index(result.query);
  if (i < 0) return;
  texts_[i] = renderer_.render_query(result);
  IntervalResult summary;
  summary.query = result.query;
  summary.time = result.time;
  summary.interval_s = result.interval_s;
  summary.dropped = result.dropped;
  summary.lost = result.lost;
  for (auto& r : latest_)
    if (r.query == result.query) {
      r = std::move(summary);
      return;
    }
  latest_.push_back(std::move(summary));
}

void PrometheusOutput::flush() {
  std::string text;
  for (const auto& t : texts_) text += t;
  exporter_.publish(text + renderer_.render_self(latest_, attached_));
}

void PrometheusOutput::started() {
  attached_ = true;
  flush();
  exporter_.serve();
  std::cerr << "Serving metrics on http://" << exporter_.address() << "/metrics\n" << std::flush;
}

int serve_plan(const Plan& plan, HttpExporter& exporter, RunOptions options) {
  PrometheusOutput output(plan, exporter);
  options.output = &output;
  options.export_rows = true;
  return run_plan(plan, options);
}

}  // namespace bpfql
