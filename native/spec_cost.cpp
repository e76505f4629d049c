#include "spec_cost.h"

#include <algorithm>
#include <cmath>

namespace llamad {

namespace {

// Marginal cost of one more token in a step, as a share of the smallest measured step, while only one batch size was
// measured: optimistic (a CPU decode of a few tokens reads the weights once, as one token does), so that longer
// drafts get tried and measured.
constexpr double kPriorSlope = 0.05;

}  // namespace

void DraftAcceptance::Add(int32_t drafted, int32_t accepted) {
  if (drafted <= 0) return;
  accepted_ = accepted_ * kDecay + accepted;
  trials_ = trials_ * kDecay + accepted + (accepted < drafted ? 1 : 0);
}

double DraftAcceptance::Rate(double prior, double weight) const {
  const double trials = trials_ + weight;
  return trials > 0 ? (accepted_ + prior * weight) / trials : prior;
}

DraftAcceptance DraftAcceptance::Capped(double max_trials) const {
  DraftAcceptance out = *this;
  if (trials_ > max_trials) {
    const double scale = max_trials / trials_;
    out.accepted_ *= scale;
    out.trials_ *= scale;
  }
  return out;
}

void StepCosts::Record(int32_t n_tokens, int64_t ns) {
  if (n_tokens < 1 || n_tokens > kMaxTokens || ns <= 0) return;
  const auto i = static_cast<size_t>(n_tokens);
  if (count_[i] == 0) ++n_known_;
  ++count_[i];
  // The mean of the first few, then an EWMA (the machine's load changes).
  const double alpha = std::max(1.0 / count_[i], 0.2);
  ns_[i] += alpha * (static_cast<double>(ns) - ns_[i]);
  dirty_ = true;
}

void StepCosts::Rebuild() const {
  dirty_ = false;
  // Least-squares line over the measured sizes (each weighted by its count, at most 8).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int32_t first = 0;
  for (int32_t n = 1; n <= kMaxTokens; ++n) {
    if (count_[n] == 0) continue;
    if (first == 0) first = n;
    const double w = std::min(count_[n], 8);
    sw += w;
    sx += w * n;
    sy += w * ns_[n];
    sxx += w * n * n;
    sxy += w * n * ns_[n];
  }
  const double det = sw * sxx - sx * sx;
  slope_ = n_known_ >= 2 && det > 0 ? (sw * sxy - sx * sy) / det : kPriorSlope * ns_[first];
  slope_ = std::max(slope_, 0.0);
  int32_t lo = 0;
  for (int32_t n = 1; n <= kMaxTokens; ++n) {
    double raw = 0;
    if (count_[n] > 0) {
      raw = ns_[n];
      lo = n;
    } else {
      int32_t hi = n + 1;
      while (hi <= kMaxTokens && count_[hi] == 0) ++hi;
      if (lo > 0 && hi <= kMaxTokens) {
        raw = ns_[lo] + (ns_[hi] - ns_[lo]) * (n - lo) / static_cast<double>(hi - lo);
      } else if (lo > 0) {
        raw = ns_[lo] + slope_ * (n - lo);
      } else {
        raw = ns_[first];  // below the smallest measured size
      }
    }
    table_[n] = std::max(raw, table_[n - 1]);
  }
}

double StepCosts::Estimate(int32_t n_tokens) const {
  if (n_known_ == 0) return 0;
  if (dirty_) Rebuild();
  const int32_t n = std::max(n_tokens, 1);
  if (n <= kMaxTokens) return table_[n];
  return table_[kMaxTokens] + slope_ * (n - kMaxTokens);
}

double DraftSizeRatio(uint64_t draft_params, uint64_t target_params, uint64_t draft_bytes, uint64_t target_bytes,
                      uint64_t draft_embd_params, uint64_t target_embd_params, bool draft_has_experts) {
  if (draft_has_experts || draft_bytes == 0 || target_bytes == 0) return 0;
  if (draft_params <= draft_embd_params || target_params <= target_embd_params) return 0;
  const double params =
      static_cast<double>(draft_params - draft_embd_params) / static_cast<double>(target_params - target_embd_params);
  const double bytes_per_param = (static_cast<double>(draft_bytes) / static_cast<double>(draft_params)) /
                                 (static_cast<double>(target_bytes) / static_cast<double>(target_params));
  return params * std::min(1.0, bytes_per_param);
}

int32_t DraftClass(bool ngram, int32_t match) {
  if (!ngram) return 0;
  if (match >= 8) return 2;
  return match >= 4 ? 1 : 0;
}

double ExpectedAccepted(double p, int32_t d) {
  if (d <= 0 || p <= 0) return 0;
  if (p >= 1) return d;
  return p * (1 - std::pow(p, d)) / (1 - p);
}

DraftChoice ChooseDraft(const StepCosts& costs, double p, int32_t max_len, int32_t base, int32_t slots,
                        double draft_ns) {
  DraftChoice best;
  if (max_len < 1 || !costs.known()) return best;
  const double t0 = costs.Estimate(base);
  const double s = std::max(slots, 1);
  for (int32_t d = 1; d <= max_len; ++d) {
    const double t1 = std::max(costs.Estimate(base + d) + d * draft_ns, t0);
    const double gain = (s + ExpectedAccepted(p, d)) / s * t0 / t1;
    if (gain > best.gain) best = {d, gain};
  }
  return best;
}

}  // namespace llamad
