#include "data.hpp"

#include <cmath>
#include <cstdio>

#include "csv_table.hpp"

namespace ddp::train {
namespace {

// Inputs ~ N(0, 1); labels = argmax of a fixed random teacher MLP (in -> 16 tanh -> classes).
// Depends only on the options and data_seed, never on the world size.
Data synthetic_data(const TrainOptions& o) {
  torch::manual_seed(o.data_seed);
  constexpr int64_t kTeacherHidden = 16;
  const auto w1 = torch::randn({o.in_dim, kTeacherHidden}) / std::sqrt(double(o.in_dim));
  const auto b1 = torch::randn({kTeacherHidden}) * 0.5;
  const auto w2 = torch::randn({kTeacherHidden, int64_t(o.classes)});
  auto teacher = [&](const torch::Tensor& x) { return torch::tanh(x.mm(w1) + b1).mm(w2).argmax(1); };
  Data d;
  d.train_x = torch::randn({o.train_samples, int64_t(o.in_dim)});
  d.val_x = torch::randn({o.val_samples, int64_t(o.in_dim)});
  d.train_y = teacher(d.train_x);
  d.val_y = teacher(d.val_x);
  d.in_dim = o.in_dim;
  d.classes = o.classes;
  d.description =
      "synthetic teacher task, " + std::to_string(o.in_dim) + " features, " + std::to_string(o.classes) + " classes";
  return d;
}

// The last val_fraction of the rows is validation; features standardised with train statistics.
Data csv_data(const TrainOptions& o) {
  CsvTable table = read_csv(o.data);
  const auto rows = static_cast<int64_t>(table.rows());
  const auto val = static_cast<int64_t>(std::llround(double(rows) * o.val_fraction));
  if (val < 1 || val >= rows) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", o.val_fraction);
    throw CsvError(o.data + ": " + std::to_string(rows) + " rows cannot be split with --val-fraction " + fraction +
                   "; add rows or change the fraction");
  }
  const auto x = torch::from_blob(table.features.data(), {rows, int64_t(table.num_features)}, torch::kFloat).clone();
  const auto y = torch::from_blob(table.labels.data(), {rows}, torch::kLong).clone();
  Data d;
  d.train_x = x.slice(0, 0, rows - val);
  d.train_y = y.slice(0, 0, rows - val);
  const auto mean = d.train_x.mean(0);
  const auto std = d.train_x.std(0).clamp_min(1e-6);
  d.train_x = (d.train_x - mean) / std;
  d.val_x = (x.slice(0, rows - val) - mean) / std;
  d.val_y = y.slice(0, rows - val);
  d.in_dim = table.num_features;
  d.classes = table.num_classes;
  d.description = o.data + ", " + std::to_string(d.in_dim) + " features, " + std::to_string(d.classes) + " classes";
  return d;
}

}  // namespace

Data load_data(const TrainOptions& o) { return o.data == "synthetic" ? synthetic_data(o) : csv_data(o); }

}  // namespace ddp::train
