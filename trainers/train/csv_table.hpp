// CSV data for `train`: rows of numeric features followed by an integer class label
// (`f1,f2,...,fn,label`), an optional header row, blank lines and `#` comments skipped.
// Pure (no torch): parse errors throw CsvError with "file:line: what is wrong; what to do".
#pragma once

#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddp::train {

class CsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CsvTable {
  std::vector<float> features;  // row-major, rows() x num_features
  std::vector<int64_t> labels;  // one per row, 0..num_classes-1
  int num_features = 0;
  int num_classes = 0;  // max label + 1
  std::size_t rows() const { return labels.size(); }
};

// Parses a whole table; `name` is used in error messages. Needs at least one data row,
// one feature column and labels that are non-negative integers.
CsvTable parse_csv(std::istream& in, const std::string& name);
// Opens `path` and parses it; a missing or unreadable file is a CsvError too.
CsvTable read_csv(const std::string& path);

}  // namespace ddp::train
