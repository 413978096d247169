// CSV output.
#include "runtime/render/csv.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "runtime/render/format_cell.h"
#include "runtime/render/units_text.h"

namespace bpfql {
namespace {

// A text cell a spreadsheet would run as a formula (CWE-1236: a cell starting with = + - @, or a
// tab or carriage return before one) gets a leading ' , which spreadsheets show as text. A text
// that is a plain number ("-5") is left as it is: it cannot be a formula.
bool plain_number(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  if (text.empty()) return false;
  bool digits = false, dot = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') digits = true;
    else if (c == '.' && !dot) dot = true;
    else return false;
  }
  return digits;
}

}  // namespace

std::string formula_safe(std::string_view text) {
  if (text.empty() || std::string_view("=+-@\t\r").find(text[0]) == std::string_view::npos ||
      plain_number(text))
    return std::string(text);
  return "'" + std::string(text);
}

namespace {

// Complex cells as JSON so that a spreadsheet or a script can still take them apart.
std::string csv_cell(const Cell& cell) {
  if (std::holds_alternative<Histogram>(cell) || std::holds_alternative<StackValue>(cell) ||
      std::holds_alternative<PercentileValue>(cell) || std::holds_alternative<StatsValue>(cell)) {
    return csv_field(json_text(cell_to_json(cell)));
  }
  bool number = std::holds_alternative<uint64_t>(cell) || std::holds_alternative<int64_t>(cell) ||
                std::holds_alternative<double>(cell) || std::holds_alternative<bool>(cell);
  if (number) return csv_field(format_scalar(cell));  // numbers stay numbers: -5 is -5
  return csv_field(formula_safe(format_scalar(cell)));
}

std::string csv_line(std::vector<std::string> fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += fields[i];
  }
  return line + '\n';
}

class CsvOutput final : public Output {
 public:
  CsvOutput(std::ostream& out, std::ostream& notes) : out_(out), notes_(notes) {}

  void interval(const IntervalResult& r) override {
    std::string name = query_name(r.query);
    std::vector<std::string> names = column_names(r);
    if (headed_.insert(r.query).second) out_ << header("time", names, r.query);
    std::string time = iso8601_utc(r.time);
    for (const auto& row : r.rows) {
      std::vector<std::string> fields{csv_field(formula_safe(name)), csv_field(time)};
      for (const auto& cell : row.cells) fields.push_back(csv_cell(cell));
      out_ << csv_line(std::move(fields));
    }
    if (r.dropped != 0) {
      notes_ << fmt::format("bpfql: {}: {}\n", name, dropped_note(r.dropped));
    }
    if (r.lost != 0) notes_ << fmt::format("bpfql: {}: lost {} events\n", name, r.lost);
  }

  void event(const StreamRow& row) override {
    std::string name = query_name(row.query);
    if (headed_.insert(row.query).second) out_ << header("ts", field_names(row), row.query);
    std::vector<std::string> fields{csv_field(formula_safe(name)), std::to_string(row.ts)};
    for (const auto& cell : row.cells) fields.push_back(csv_cell(cell));
    out_ << csv_line(std::move(fields));
  }

  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    notes_ << not_printed_note(query, count);
  }

  void flush() override {
    out_.flush();
    notes_.flush();
  }

 private:
  // A column with a unit names it: "sum(duration) (ns)" (numbers stay in that unit).
  static std::string header(std::string_view second, const std::vector<std::string>& names,
                            const PlanQuery* query) {
    std::vector<std::string> fields{"query", std::string(second)};
    for (const auto& n : names) {
      std::string unit = unit_name(column_unit(query, n));
      fields.push_back(csv_field(formula_safe(unit.empty() ? n : n + " (" + unit + ")")));
    }
    return csv_line(std::move(fields));
  }

  std::ostream& out_;
  std::ostream& notes_;
  std::set<const PlanQuery*> headed_;
};

// Routes each query's rows to a CsvOutput on its own file, opened at its first row.
class CsvDirectoryOutput final : public Output {
 public:
  CsvDirectoryOutput(std::string dir, std::ostream& notes) : dir_(std::move(dir)), notes_(notes) {}

  void interval(const IntervalResult& r) override {
    if (Output* o = for_query(r.query)) o->interval(r);
  }
  void event(const StreamRow& row) override {
    if (Output* o = for_query(row.query)) o->event(row);
  }
  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    notes_ << not_printed_note(query, count);
  }
  void flush() override {
    for (auto& [q, f] : files_) f.output->flush();
    notes_.flush();
  }

 private:
  struct File {
    std::unique_ptr<std::ofstream> stream;
    std::unique_ptr<Output> output;
  };

  Output* for_query(const PlanQuery* q) {
    auto it = files_.find(q);
    if (it != files_.end()) return it->second.output.get();
    std::string path = dir_ + "/" + query_name(q) + ".csv";
    auto stream = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc);
    if (!*stream) {
      notes_ << fmt::format("bpfql: cannot write {}: {}\n", path, std::strerror(errno));
      files_[q] = File{};
      return nullptr;
    }
    File f{std::move(stream), nullptr};
    f.output = make_csv_output(*f.stream, notes_);
    Output* out = f.output.get();
    files_[q] = std::move(f);
    return out;
  }

  std::string dir_;
  std::ostream& notes_;
  std::map<const PlanQuery*, File> files_;
};

}  // namespace

std::unique_ptr<Output> make_csv_directory_output(const std::string& dir, std::ostream& notes) {
  return std::make_unique<CsvDirectoryOutput>(dir, notes);
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::unique_ptr<Output> make_csv_output(std::ostream& out, std::ostream& notes) {
  return std::make_unique<CsvOutput>(out, notes);
}

}  // namespace bpfql
