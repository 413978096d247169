// Prometheus text exposition (format 0.0.4) of the latest interval results, for `bpfql serve`.
// Pure: IntervalResults in, text out; the HTTP side (runtime/serve/) only hands the text out.
//
// Mapping (spec §6; docs/language.md "Serving metrics" says the same for users):
//   metric name   bpfql_<query>_<item>: the item's alias, else its source text; every run of
//                 characters outside [a-zA-Z0-9_] becomes one '_', leading/trailing '_' go
//                 (`read-bytes`, `count()` → bpfql_read_bytes_count). A name that would repeat
//                 an earlier one gets _2, _3, ...
//   labels        one per group_by key, named like items (`comm`, `args.fd` → args_fd); values
//                 escaped (\\, \", \n); bytes that are not UTF-8 become U+FFFD; rows that show the
//                 same labels are merged into one series (prometheus.cpp, merge_cells)
//   count()       counter
//   sum(E)        counter (spec §6; one that sums negative values can fall: docs say so)
//   min/max/avg   gauge (over everything seen since the start: serve never clears maps);
//                 no sample until the key has seen an event
//   stats(E)      <name>_count counter, <name>_sum counter, <name>_avg gauge
//   hist/lhist/   histogram: cumulative <name>_bucket{le="B"} for every bucket from the lowest
//   percentile    to the highest that ever held a value, then le="+Inf", <name>_sum and
//                 <name>_count.
//                 bpfql buckets are integer ranges [low, high): le is high - 1, exact for integer
//                 values (v < high ⇔ v ≤ high - 1). percentile() exports its log-linear buckets.
//                 <name>_sum comes from the sum(E) serve adds next to each histogram
//                 (compiler/check/histogram_sums.h): its column is hidden, only read here.
//   self          bpfql_up, bpfql_lost_events_total{query}, bpfql_dropped_keys_total{query},
//                 bpfql_probe_attached{query,probe}, bpfql_last_refresh_timestamp_seconds{query}
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// "count()" → "count", "sum(args.count)" → "sum_args_count", "read-bytes" → "read_bytes".
std::string prometheus_name_part(std::string_view text);
// A valid label name: as above, '_' in front of a leading digit, "key_" in front of names
// Prometheus reserves (le, quantile, __*) or "" .
std::string prometheus_label_name(std::string_view text);
// Label value escaping: \ → \\, " → \", newline → \n; invalid UTF-8 → U+FFFD.
std::string prometheus_label_value(std::string_view text);
// HELP text escaping: \ → \\, newline → \n.
std::string prometheus_help_text(std::string_view text);
// A sample value: integers exact, doubles shortest round-trip, NaN, +Inf, -Inf.
std::string prometheus_double(double value);

inline constexpr size_t kDefaultMaxSeries = 2000;  // per query (--max-series)

class PrometheusRenderer {
 public:
  // Metric and label names are fixed here, once per Plan, so they never change between scrapes.
  // `plan` must outlive the renderer.
  // `max_series`: per query, the label sets (series) exported; beyond it new label sets are
  // refused (counted in bpfql_series_refused) while those already exported stay.
  // `failed`: names of queries that were not loaded: bpfql_query_up 0 for each.
  explicit PrometheusRenderer(const Plan& plan, size_t max_series = kDefaultMaxSeries,
                              std::vector<std::string> failed = {});

  // `latest`: the most recent IntervalResult of each query that has one (queries that have not
  // been read yet are left out). `attached`: whether the probes are attached (all or none).
  std::string render(std::span<const IntervalResult> latest, bool attached);

  // The pieces of render(): one query's metric families, and the self metrics (which read only
  // the results' query, time, lost and dropped, not their rows).
  std::string render_query(const IntervalResult& result);
  std::string render_self(std::span<const IntervalResult> latest, bool attached) const;
  // The position of `query` in the Plan (render order), or -1.
  int query_index(const PlanQuery* query) const;
  // After a reload: the label sets `old` exported for each of `queries` (by name) count as
  // exported here too, so a kept query's series stay exported under the cap.
  void carry_admitted(const PrometheusRenderer& old, const std::vector<std::string>& queries);
  // serve --expire-after: bpfql_expired_keys_total per query, 0 from the first scrape.
  void set_expiring(bool on) { expiring_ = on; }

 private:
  struct Column {
    int aggregate = -1;     // index into PlanQuery::aggregates, or -1 for a key column
    std::string label;      // key columns: the label name
    std::string name;       // aggregate columns: the metric (family) name
    std::string help;
    bool hidden = false;  // a histogram's sum (compiler/check/histogram_sums.h): only its `_sum`
    int sum = -1;         // histogram columns: the index of their sum column, if there is one
    std::vector<int64_t> les;  // histogram columns: the family's fixed bucket bounds
  };
  struct QueryNames {
    const PlanQuery* query = nullptr;
    std::vector<Column> columns;  // parallel to PlanQuery::columns
    std::unordered_set<std::string> admitted;  // label sets exported so far (the series cap)
    size_t series = 0;   // at the last render: label sets exported
    size_t refused = 0;  // at the last render: label sets over the cap, not exported
  };

  void render_families(const IntervalResult& r, QueryNames& names, std::string& out);

  const Plan& plan_;
  size_t max_series_;
  std::vector<std::string> failed_;
  std::vector<QueryNames> queries_;
  bool expiring_ = false;
};

}  // namespace bpfql
