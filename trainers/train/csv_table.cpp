#include "csv_table.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace ddp::train {
namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

bool parse_float(const std::string& text, float& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const float value = std::strtof(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value)) return false;
  out = value;
  return true;
}

bool parse_label(const std::string& text, int64_t& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last && !text.empty();
}

}  // namespace

namespace {

// One data row (f1,...,fn,label) into the table; `columns` is the first data row's count.
void add_row(const std::vector<std::string>& fields, int columns, const std::string& name, int line_no, CsvTable& table,
             int64_t& max_label) {
  if (static_cast<int>(fields.size()) != columns) {
    throw CsvError(
        fmt::format("{}:{}: expected {} columns like the first data row, got {}; "
                    "every row must be f1,...,f{},label",
                    name, line_no, columns, fields.size(), columns - 1));
  }
  for (int c = 0; c + 1 < columns; ++c) {
    float value = 0;
    if (!parse_float(fields[c], value)) {
      throw CsvError(
          fmt::format("{}:{}: column {} is '{}', not a finite number; "
                      "features must be numeric",
                      name, line_no, c + 1, fields[c]));
    }
    table.features.push_back(value);
  }
  int64_t label = 0;
  if (!parse_label(fields.back(), label) || label < 0) {
    throw CsvError(
        fmt::format("{}:{}: label (last column) is '{}', not a non-negative integer; "
                    "the last column must be the class index 0..C-1",
                    name, line_no, fields.back()));
  }
  max_label = std::max(max_label, label);
  table.labels.push_back(label);
}

}  // namespace

CsvTable parse_csv(std::istream& in, const std::string& name) {
  CsvTable table;
  std::string line;
  int line_no = 0;
  bool seen_first = false;
  int columns = 0;
  int64_t max_label = -1;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    const auto fields = split_fields(content);
    const bool first_line = !seen_first;
    seen_first = true;
    float probe = 0;
    if (first_line && !parse_float(fields[0], probe)) continue;  // header row
    if (columns == 0) {
      if (fields.size() < 2) {
        throw CsvError(
            fmt::format("{}:{}: need at least 2 columns (features..., label), got 1; "
                        "write each row as f1,...,fn,label",
                        name, line_no));
      }
      columns = static_cast<int>(fields.size());
    }
    add_row(fields, columns, name, line_no, table, max_label);
  }
  if (in.bad()) throw CsvError(fmt::format("{}: read error after line {}", name, line_no));
  if (table.labels.empty()) {
    throw CsvError(fmt::format("{}: no data rows; expected lines of f1,...,fn,label", name));
  }
  table.num_features = columns - 1;
  table.num_classes = static_cast<int>(max_label + 1);
  if (table.num_classes < 2) {
    throw CsvError(fmt::format("{}: every label is 0; classification needs at least 2 classes", name));
  }
  return table;
}

CsvTable read_csv(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw CsvError(fmt::format("data file '{}' is a directory; pass the path of a CSV file (f1,...,fn,label)", path));
  }
  std::ifstream in(path);
  if (!in) {
    throw CsvError(
        fmt::format("cannot read data file '{}': {}; pass --data synthetic or the path of a "
                    "readable CSV (f1,...,fn,label)",
                    path, std::strerror(errno)));
  }
  return parse_csv(in, path);
}

}  // namespace ddp::train
