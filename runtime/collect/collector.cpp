// Raw map snapshot → grouped, decoded, sorted rows (see collector.h).
#include "runtime/collect/collector.h"

#include <algorithm>
#include <cmath>
#include <compare>
#include <optional>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

namespace bpfql {

void PerCpuEntries::add(std::span<const uint8_t> key, std::span<const uint8_t> value) {
  keys.insert(keys.end(), key.begin(), key.end());
  size_t per_entry = size_t{stride} * ncpus;
  size_t start = values.size();
  values.resize(start + per_entry, 0);
  std::copy_n(value.begin(), std::min(value.size(), per_entry), values.begin() + start);
}

namespace {

// Everything known about one group key before it becomes a row.
struct Group {
  std::span<const uint8_t> key;              // the key struct's bytes (empty for keyless)
  std::span<const uint8_t> values;           // all CPUs' value structs; empty if not in the map
  std::vector<std::vector<uint64_t>> slots;  // per aggregate: summed histogram counters
};

// Group keys → groups. Keys point into the snapshot, which outlives this.
class Groups {
 public:
  explicit Groups(size_t expected) {
    index_.reserve(expected);
    groups_.reserve(expected);
  }

  Group& at(std::span<const uint8_t> key) {
    std::string_view k(reinterpret_cast<const char*>(key.data()), key.size());
    auto [it, inserted] = index_.try_emplace(k, groups_.size());
    if (inserted) groups_.push_back(Group{key, {}, {}});
    return groups_[it->second];
  }
  std::vector<Group>& all() { return groups_; }

 private:
  std::unordered_map<std::string_view, size_t> index_;
  std::vector<Group> groups_;
};

void add_value_map(const PlanQuery& q, const PerCpuEntries& map, Groups& groups) {
  for (size_t i = 0; i < map.count(); ++i) {
    // A keyless query's value map is an array of one; its index is not a group key.
    if (q.keys.empty() && read_unsigned(map.key(i), 0, 4) != 0) continue;
    auto key = q.keys.empty() ? std::span<const uint8_t>{} : map.key(i);
    groups.at(key).values = map.value(i);
  }
}

// Keyed: the map key is the key struct followed by a u64 slot. Keyless: a u32 array index.
void add_hist_map(const PlanQuery& q, size_t agg_index, const PerCpuEntries& map, Groups& groups) {
  const int nslots = histogram_slots(q.aggregates[agg_index]);
  for (size_t i = 0; i < map.count(); ++i) {
    auto key = map.key(i);
    uint64_t slot = q.keys.empty() ? read_unsigned(key, 0, 4) : read_unsigned(key, q.key_size, 8);
    if (slot >= static_cast<uint64_t>(nslots)) continue;
    uint64_t count = sum_percpu_u64(map.value(i), map.ncpus);
    if (q.keys.empty() && count == 0) continue;  // arrays hold every slot, most of them empty
    auto group_key = q.keys.empty() ? std::span<const uint8_t>{} : key.first(q.key_size);
    Group& g = groups.at(group_key);
    if (g.slots.empty()) g.slots.resize(q.aggregates.size());
    auto& slots = g.slots[agg_index];
    if (slots.empty()) slots.resize(nslots, 0);
    slots[slot] += count;
  }
}

// Where each output column comes from: a key field or an aggregate (by index), or nowhere.
struct ColumnSource {
  int key = -1;
  int aggregate = -1;
  int computed = -1;
};

std::vector<ColumnSource> column_sources(const PlanQuery& q) {
  std::vector<ColumnSource> out(q.columns.size());
  for (size_t c = 0; c < q.columns.size(); ++c) {
    for (size_t i = 0; i < q.keys.size(); ++i)
      if (q.keys[i].name == q.columns[c]) out[c].key = static_cast<int>(i);
    for (size_t i = 0; i < q.aggregates.size(); ++i)
      if (q.aggregates[i].name == q.columns[c]) out[c].aggregate = static_cast<int>(i);
    for (size_t i = 0; i < q.computed.size(); ++i)
      if (q.computed[i].name == q.columns[c]) out[c].computed = static_cast<int>(i);
  }
  return out;
}

std::optional<double> cell_number(const Cell& c) {
  if (const auto* u = std::get_if<uint64_t>(&c)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&c)) return *d;
  return std::nullopt;
}

// A percentile never lies outside the min() and max() of the same value when the query has them
// (a bucket's midpoint can pass the largest value seen in that bucket).
void clamp_percentiles(const PlanQuery& q, std::vector<Cell>& aggs) {
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    auto* p = std::get_if<PercentileValue>(&aggs[i]);
    if (!p || q.aggregates[i].arg_text.empty()) continue;
    for (size_t j = 0; j < q.aggregates.size(); ++j) {
      const PlanAggregate& other = q.aggregates[j];
      if (other.arg_text != q.aggregates[i].arg_text) continue;
      auto bound = cell_number(aggs[j]);
      if (!bound) continue;
      for (auto& [pct, value] : p->values) {
        if (other.kind == AggKind::Max) value = std::min(value, *bound);
        if (other.kind == AggKind::Min) value = std::max(value, *bound);
      }
    }
  }
}

}  // namespace

Cell evaluate_computed(const PlanComputed& computed, std::span<const Cell> aggregates,
                       double interval_s) {
  std::vector<double> stack;
  for (const ComputedOp& op : computed.program) {
    using K = ComputedOp::Kind;
    if (op.kind == K::Constant || op.kind == K::Interval || op.kind == K::Aggregate) {
      double v = op.value;
      if (op.kind == K::Interval) v = interval_s;
      if (op.kind == K::Aggregate) {
        if (op.aggregate < 0 || static_cast<size_t>(op.aggregate) >= aggregates.size())
          return std::monostate{};
        auto n = cell_number(aggregates[static_cast<size_t>(op.aggregate)]);
        if (!n) return std::monostate{};  // min()/max() of a key with no event
        v = *n;
      }
      stack.push_back(v);
      continue;
    }
    if (op.kind == K::Neg) {
      if (stack.empty()) return std::monostate{};
      stack.back() = -stack.back();
      continue;
    }
    if (stack.size() < 2) return std::monostate{};
    double b = stack.back();
    stack.pop_back();
    double& a = stack.back();
    switch (op.kind) {
      case K::Add: a += b; break;
      case K::Sub: a -= b; break;
      case K::Mul: a *= b; break;
      case K::Div:
        if (b == 0) return std::monostate{};  // no rate over an empty interval
        a /= b;
        break;
      default: break;
    }
  }
  if (stack.size() != 1 || !std::isfinite(stack.back())) return std::monostate{};
  return stack.back();
}

namespace {

ResultRow make_row(const PlanQuery& q, const std::vector<ColumnSource>& sources, const Group& g,
                   uint32_t stride, uint32_t ncpus, const DecodeHooks& hooks, double interval_s) {
  int pid = record_pid(q.keys, g.key);
  std::vector<Cell> aggs = merge_value_cells(q, g.values, stride, ncpus);
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    if (!is_histogram(q.aggregates[i].kind)) continue;
    if (i < g.slots.size() && !g.slots[i].empty()) {
      aggs[i] = histogram_cell(q.aggregates[i], g.slots[i]);
    } else {
      std::vector<uint64_t> none(histogram_slots(q.aggregates[i]), 0);
      aggs[i] = histogram_cell(q.aggregates[i], none);
    }
  }
  clamp_percentiles(q, aggs);
  ResultRow row;
  row.cells.resize(sources.size());
  for (size_t c = 0; c < sources.size(); ++c)
    if (sources[c].computed >= 0)
      row.cells[c] = evaluate_computed(q.computed[sources[c].computed], aggs, interval_s);
  for (size_t c = 0; c < sources.size(); ++c) {
    if (sources[c].key >= 0)
      row.cells[c] = decode_field(q.keys[sources[c].key], g.key, pid, q.probe_names, hooks);
    else if (sources[c].aggregate >= 0)
      row.cells[c] = std::move(aggs[sources[c].aggregate]);  // computed items are done
  }
  return row;
}

}  // namespace

namespace {

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

uint64_t total_count(const Histogram& h) {
  uint64_t n = 0;
  for (const auto& b : h.buckets) n += b.count;
  return n;
}

double first_value(const PercentileValue& p) { return p.values.empty() ? 0 : p.values[0].second; }

}  // namespace

int compare_cells(const Cell& a, const Cell& b) {
  if (a.index() != b.index()) return three_way(a.index(), b.index());
  return std::visit(
      [&](const auto& x) -> int {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, std::monostate>)
          return 0;
        else if constexpr (std::is_same_v<T, Histogram>)
          return three_way(total_count(x), total_count(y));
        else if constexpr (std::is_same_v<T, StatsValue>)
          return three_way(x.count, y.count);
        else if constexpr (std::is_same_v<T, PercentileValue>)
          return three_way(first_value(x), first_value(y));
        else if constexpr (std::is_same_v<T, StackValue>)
          return three_way(x.frames, y.frames);
        else
          return three_way(x, y);
      },
      a);
}

namespace {

std::optional<size_t> column_index(const PlanQuery& q, const std::string& name) {
  auto it = std::find(q.columns.begin(), q.columns.end(), name);
  if (it == q.columns.end()) return std::nullopt;
  return static_cast<size_t>(it - q.columns.begin());
}

std::optional<size_t> order_column(const PlanQuery& q) {
  if (!q.order_by.empty()) return column_index(q, q.order_by);
  if (q.aggregates.empty()) return std::nullopt;
  return column_index(q, q.aggregates.front().name);
}

}  // namespace

namespace {

// A cell reduced to what ordering needs, so sorting many rows compares plain numbers instead of
// visiting variants: the kind first (as compare_cells), then an order-preserving u64 encoding of
// the number, or the string / stack / bytes it points to.
struct SortValue {
  uint64_t num = 0;
  const Cell* cell = nullptr;
  uint32_t kind = 0;
};

uint64_t ordered_bits(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }
uint64_t ordered_bits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
}

SortValue sort_value(const Cell& c) {
  SortValue v;
  v.kind = static_cast<uint32_t>(c.index());
  v.cell = &c;
  if (auto* x = std::get_if<uint64_t>(&c))
    v.num = *x;
  else if (auto* x = std::get_if<int64_t>(&c))
    v.num = ordered_bits(*x);
  else if (auto* x = std::get_if<double>(&c))
    v.num = ordered_bits(*x);
  else if (auto* x = std::get_if<bool>(&c))
    v.num = *x;
  else if (auto* x = std::get_if<Histogram>(&c))
    v.num = total_count(*x);
  else if (auto* x = std::get_if<StatsValue>(&c))
    v.num = x->count;
  else if (auto* x = std::get_if<PercentileValue>(&c))
    v.num = ordered_bits(first_value(*x));
  return v;
}

int compare_sort_values(const SortValue& a, const SortValue& b) {
  if (a.kind != b.kind) return three_way(a.kind, b.kind);
  if (a.num != b.num) return three_way(a.num, b.num);
  if (std::holds_alternative<std::string>(*a.cell) || std::holds_alternative<StackValue>(*a.cell) ||
      std::holds_alternative<BytesValue>(*a.cell))
    return compare_cells(*a.cell, *b.cell);
  return 0;
}

}  // namespace

namespace {

// What decides the order: order_by (if any), then the keys ascending.
struct OrderSpec {
  std::vector<size_t> columns;  // indices into PlanQuery::columns
  bool first_descending = false;
};

OrderSpec order_spec(const PlanQuery& query) {
  OrderSpec spec;
  std::optional<size_t> order = order_column(query);
  if (order) spec.columns.push_back(*order);
  for (const auto& k : query.keys)
    if (auto i = column_index(query, k.name)) spec.columns.push_back(*i);
  spec.first_descending = order && query.descending;
  return spec;
}

// The indices of the first `keep` of `count` items in order; cell(i, k) is item i's cell of the
// k-th order column. Ties on every column go by index, so the order is total and deterministic.
template <typename CellAt>
std::vector<size_t> first_in_order(const OrderSpec& spec, size_t count, size_t keep, CellAt cell) {
  const size_t width = spec.columns.size();
  // The first two columns' values travel with the index (sorting moves contiguous items, no
  // cache miss per comparison); the others are looked up only to break ties.
  struct Item {
    SortValue first;
    SortValue second;
    size_t index;
  };
  std::vector<Item> items(count);
  for (size_t i = 0; i < count; ++i)
    items[i] = {width > 0 ? sort_value(cell(i, 0)) : SortValue{},
                width > 1 ? sort_value(cell(i, 1)) : SortValue{}, i};
  auto before = [&](const Item& x, const Item& y) {
    if (width > 0) {
      int cmp = compare_sort_values(x.first, y.first);
      if (cmp != 0) return spec.first_descending ? cmp > 0 : cmp < 0;
    }
    if (width > 1) {
      int cmp = compare_sort_values(x.second, y.second);
      if (cmp != 0) return cmp < 0;
    }
    for (size_t c = 2; c < width; ++c) {
      int cmp = compare_sort_values(sort_value(cell(x.index, c)), sort_value(cell(y.index, c)));
      if (cmp != 0) return cmp < 0;
    }
    return x.index < y.index;
  };
  keep = std::min(keep, count);
  if (keep < items.size())
    std::partial_sort(items.begin(), items.begin() + keep, items.end(), before);
  else
    std::sort(items.begin(), items.end(), before);
  std::vector<size_t> out(keep);
  for (size_t i = 0; i < keep; ++i) out[i] = items[i].index;
  return out;
}

}  // namespace

namespace {

// A limited query over a large value map: only the columns that decide the order are decoded for
// every entry (into one flat array); whole rows are made for the `limit` entries that come first.
// At 100k keys and `limit: 20` that spares 99,980 rows of cells. The order is first_in_order's,
// as in sort_and_limit, which then sorts the few rows again to the same order.
std::vector<ResultRow> top_rows(const PlanQuery& query, const std::vector<ColumnSource>& sources,
                                const PerCpuEntries& values, const DecodeHooks& hooks,
                                double interval_s) {
  OrderSpec spec = order_spec(query);
  const size_t width = spec.columns.size();
  const size_t count = values.count();
  std::vector<Cell> cells(count * width);
  for (size_t i = 0; i < count; ++i) {
    auto key = values.key(i);
    int pid = record_pid(query.keys, key);
    std::vector<Cell> aggs;
    for (size_t k = 0; k < width; ++k) {
      const ColumnSource& src = sources[spec.columns[k]];
      if (src.key >= 0) {
        cells[i * width + k] = decode_field(query.keys[src.key], key, pid, query.probe_names, hooks);
      } else if (src.aggregate >= 0) {
        if (aggs.empty()) aggs = merge_value_cells(query, values.value(i), values.stride, values.ncpus);
        cells[i * width + k] = std::move(aggs[src.aggregate]);
      }
    }
  }
  auto order = first_in_order(spec, count, query.limit,
                              [&](size_t i, size_t k) -> const Cell& { return cells[i * width + k]; });
  std::vector<ResultRow> rows;
  rows.reserve(order.size());
  for (size_t i : order) {
    Group g{values.key(i), values.value(i), {}};
    rows.push_back(make_row(query, sources, g, values.stride, values.ncpus, hooks, interval_s));
  }
  return rows;
}

}  // namespace

bool holds_events(const QuerySnapshot& snapshot) {
  auto nonzero = [](const PerCpuEntries& m) {
    return std::any_of(m.values.begin(), m.values.end(), [](uint8_t b) { return b != 0; });
  };
  return snapshot.dropped > 0 || nonzero(snapshot.values) ||
         std::any_of(snapshot.hists.begin(), snapshot.hists.end(), nonzero);
}

size_t snapshot_digest(const QuerySnapshot& snapshot) {
  auto bytes = [](const std::vector<uint8_t>& v) {
    return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()));
  };
  size_t digest = std::hash<uint64_t>{}(snapshot.dropped);
  auto mix = [&](const PerCpuEntries& m) {
    digest = digest * 1099511628211u ^ bytes(m.keys);
    digest = digest * 1099511628211u ^ bytes(m.values);
  };
  mix(snapshot.values);
  for (const auto& h : snapshot.hists) mix(h);
  return digest;
}

std::vector<ResultRow> build_rows(const PlanQuery& query, const QuerySnapshot& snapshot,
                                  const DecodeHooks& hooks, double interval_s) {
  bool has_hist_maps = false;
  for (size_t i = 0; i < query.aggregates.size() && i < snapshot.hists.size(); ++i)
    if (is_histogram(query.aggregates[i].kind) && snapshot.hists[i].count() > 0)
      has_hist_maps = true;

  auto sources = column_sources(query);
  std::vector<ResultRow> rows;
  if (!has_hist_maps && !query.keys.empty()) {
    // Value map keys are unique: each entry is a row, with no grouping (and no group list: at
    // 100k keys that list alone is 5 MB of memory touched for the first time).
    // (Not with computed columns: ordering may need them, and they need whole rows.)
    if (query.limit > 0 && snapshot.values.count() > 2 * query.limit && query.computed.empty())
      return top_rows(query, sources, snapshot.values, hooks, interval_s);
    rows.reserve(snapshot.values.count());
    for (size_t i = 0; i < snapshot.values.count(); ++i) {
      Group g{snapshot.values.key(i), snapshot.values.value(i), {}};
      rows.push_back(
          make_row(query, sources, g, snapshot.values.stride, snapshot.values.ncpus, hooks, interval_s));
    }
    return rows;
  }

  Groups groups(query.keys.empty() ? 1 : snapshot.values.count());
  if (query.keys.empty()) groups.at({});  // a keyless query always prints its one row
  add_value_map(query, snapshot.values, groups);
  for (size_t i = 0; i < query.aggregates.size() && i < snapshot.hists.size(); ++i)
    if (is_histogram(query.aggregates[i].kind)) add_hist_map(query, i, snapshot.hists[i], groups);

  rows.reserve(groups.all().size());
  for (const auto& g : groups.all())
    rows.push_back(
        make_row(query, sources, g, snapshot.values.stride, snapshot.values.ncpus, hooks, interval_s));
  return rows;
}

void sort_and_limit(const PlanQuery& query, std::vector<ResultRow>& rows) {
  OrderSpec spec = order_spec(query);
  size_t keep = query.limit > 0 ? query.limit : rows.size();
  auto order = first_in_order(spec, rows.size(), keep, [&](size_t i, size_t k) -> const Cell& {
    return rows[i].cells[spec.columns[k]];
  });
  std::vector<ResultRow> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(rows[i]));
  rows = std::move(sorted);
}

}  // namespace bpfql
