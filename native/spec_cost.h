// The cost model of speculative decoding (docs/native.md "Speculative decoding"): measured step times of the target
// by batch size, the acceptance of drafted tokens, and the draft length that maximises the expected speed-up (0 when
// none pays). Pure C++ (no llama.h, no napi.h), used by the engine's decode thread only.
#ifndef LLAMAD_NATIVE_SPEC_COST_H_
#define LLAMAD_NATIVE_SPEC_COST_H_

#include <array>
#include <cstdint>

namespace llamad {

// Acceptance of drafted tokens as decayed counts. A draft is verified token by token and stops at the first
// rejection, so a draft of d tokens with a accepted is a + (a < d ? 1 : 0) trials of which a succeeded: the rate is
// the probability that a drafted token is accepted when the tokens before it were (a geometric model).
class DraftAcceptance {
 public:
  // Decays the counts (each verification weighs kDecay of the one after it) and adds one verified draft.
  void Add(int32_t drafted, int32_t accepted);
  // Accepted ÷ trials, with `prior` counted as `weight` trials (both ≥ 0); `prior` when nothing was observed.
  double Rate(double prior, double weight) const;
  // The same counts, scaled down to at most `max_trials` trials (a new task starts from its model pair's record
  // without being bound by it for long).
  DraftAcceptance Capped(double max_trials) const;
  double trials() const { return trials_; }

 private:
  static constexpr double kDecay = 0.9;
  double accepted_ = 0;
  double trials_ = 0;
};

// Wall time of the target's llama_decode by batch size, nanoseconds, from the steps that decoded generating slots
// only (their pending tokens and drafts): an EWMA per size up to kMaxTokens, interpolated between measured sizes and
// extrapolated above the largest with a least-squares line over all of them.
class StepCosts {
 public:
  static constexpr int32_t kMaxTokens = 512;
  void Record(int32_t n_tokens, int64_t ns);
  // Estimated ns of a step of `n_tokens` (≥ 1); 0 while nothing is measured. Non-decreasing in n_tokens.
  double Estimate(int32_t n_tokens) const;
  bool known() const { return n_known_ > 0; }

 private:
  void Rebuild() const;

  std::array<double, kMaxTokens + 1> ns_{};
  std::array<int32_t, kMaxTokens + 1> count_{};
  int32_t n_known_ = 0;
  // Estimates by size (table_[0] = 0) and the line's slope (ns per token), rebuilt after a Record.
  mutable std::array<double, kMaxTokens + 1> table_{};
  mutable double slope_ = 0;
  mutable bool dirty_ = false;
};

// E[accepted tokens] of a draft of `d` tokens when each is accepted with probability `p` after the ones before it:
// p + p² + … + p^d.
double ExpectedAccepted(double p, int32_t d);

// A draft length and the speed-up it is expected to give (1 = as fast as no draft).
struct DraftChoice {
  int32_t length = 0;
  double gain = 1.0;
};

// The draft length in [1, max_len] with the highest expected gain for a step of `slots` generating slots whose batch
// holds `base` tokens without this slot's draft (≥ 1):
//   gain(d) = (slots + E[accepted](p, d)) ÷ slots  ÷  (T(base + d) + d × draft_ns) ÷ T(base)
// — the step's tokens over its time, relative to the step without this draft. `draft_ns`: what proposing one token
// costs (a draft model's decode; 0 for an n-gram lookup). {0, 1} when max_len < 1 or nothing is measured yet.
DraftChoice ChooseDraft(const StepCosts& costs, double p, int32_t max_len, int32_t base, int32_t slots,
                        double draft_ns);

// Per-task gate of speculation (Slot::spec): the acceptance so far and the probe schedule, kept apart per kind of
// draft (DraftClass). A task drafts when the best length's gain is at least kMinGain; otherwise it drafts nothing, and
// every `backoff` steps (doubled after each probe, up to a maximum) it drafts a short probe to measure the acceptance
// again.
struct DraftGate {
  struct Track {
    DraftAcceptance acceptance;
    int32_t wait = 0;     // steps without a draft of this class until the next probe
    int32_t backoff = 0;  // the wait after the next probe (0: not started, set by the engine)
  };
  static constexpr int32_t kClasses = 3;
  std::array<Track, kClasses> tracks{};
  // The class of this step's draft (its verification adds to that track).
  int32_t draft_class = 0;
  // A draft-model draft decided in an earlier step whose catch-up of the draft context is still running: its length
  // (0: none); the slot drafts it once caught up.
  int32_t catch_up_length = 0;
  // A draft-model probe in flight (a draft the acceptance does not pay for): what it costs goes to the model pair's
  // probe debt (Engine::probe_debt_ns_) — its draft decodes, and what its tokens add to the target's step
  // (`probe_extra_ns`, estimated when decided) less `probe_token_ns` (this slot's share of a step) per accepted token.
  bool probing = false;
  double probe_extra_ns = 0;
  double probe_token_ns = 0;
};

// The track of a draft: a draft model's is 0; an n-gram draft's grows with how many of the sequence's last tokens its
// earlier occurrence matched (2–3, 4–7, 8 or more), because a longer match predicts a longer accepted run: a copied
// span matches ever longer as it goes on, a chance repeat of two tokens rarely continues. A failed probe on short
// matches then does not hold back a 16-token match, and the reverse.
int32_t DraftClass(bool ngram, int32_t match);

// The least a draft model's token can cost, as a share of a one-token step of the target. A dense decode multiplies
// by every weight but the token embeddings (one row of those is read), so the draft's share of the target's
// parameters without the embedding tables bounds its share of the arithmetic, and that share scaled by the ratio of
// their average bytes per parameter bounds its share of the weight bytes read: whichever bound a device hits, a
// draft token costs at least the smaller of the two. 1 for the model as its own draft, which can then never pay.
// `*_embd_params`: n_vocab × n_embd. 0 (no floor) when a count leaves nothing, or the draft is a mixture of experts
// (it reads only some of its weights per token).
double DraftSizeRatio(uint64_t draft_params, uint64_t target_params, uint64_t draft_bytes, uint64_t target_bytes,
                      uint64_t draft_embd_params, uint64_t target_embd_params, bool draft_has_experts);

// Least expected gain for which a task drafts.
constexpr double kMinGain = 1.1;

// Share of the target's decode time that probes of a draft model which does not pay may cost, over time: a probe
// leaves a debt of what it cost (its draft context's catch-up over the tokens since the last probe, which for a new
// task is its whole prompt, its draft decodes and the extra tokens of the target's step), every step repays this
// share of its time, and the next probe waits until nothing is owed.
constexpr double kProbeBudget = 0.02;

}  // namespace llamad

#endif  // LLAMAD_NATIVE_SPEC_COST_H_
