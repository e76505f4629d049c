#include "grammar_constraint.h"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <string>

#include "error_code.h"
#include "llama-grammar.h"
#include "llama-vocab.h"

namespace llamad {

namespace {

// Decodes `piece` (up to its first NUL byte) from a fresh UTF-8 state, with the conventions of llama.cpp's grammar
// (src/llama-grammar.cpp decode_utf8): a sequence's length comes from its first byte's high nibble, continuation
// bytes are taken without checking their marker bits, an unfinished last sequence leaves its bits and the bytes still
// missing, and a stray continuation byte as a first byte makes the whole piece invalid (no code points, remain -1).
// Appends the code points and a terminating 0 to `out`.
void DecodeFresh(const std::string& piece, std::vector<uint32_t>& out, uint32_t& value_out, int8_t& remain_out) {
  static constexpr int kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
  const size_t start = out.size();
  const char* pos = piece.c_str();
  uint32_t value = 0;
  int remain = 0;
  while (*pos != 0) {
    const auto first = static_cast<uint8_t>(*pos);
    remain = kLength[first >> 4] - 1;
    if (remain < 0) {
      out.resize(start);
      out.push_back(0);
      value_out = 0;
      remain_out = -1;
      return;
    }
    value = first & ((1u << (7 - remain)) - 1);
    ++pos;
    while (*pos != 0 && remain > 0) {
      value = (value << 6) + (static_cast<uint8_t>(*pos) & 0x3F);
      ++pos;
      --remain;
    }
    if (remain == 0) out.push_back(value);
  }
  out.push_back(0);
  value_out = value;
  remain_out = static_cast<int8_t>(remain);
}

bool CheckRequested() {
  const char* flag = std::getenv("LLAMAD_GRAMMAR_CHECK");
  return flag != nullptr && std::string(flag) == "1";
}

}  // namespace

const VocabPieces::Table& VocabPieces::Get() const {
  std::call_once(built_, [this] {
    const int32_t n_vocab = vocab_->n_tokens();
    table_.offset.resize(n_vocab);
    table_.partial_value.resize(n_vocab);
    table_.partial_remain.resize(n_vocab);
    table_.kind.resize(n_vocab);
    table_.code_points.reserve(static_cast<size_t>(n_vocab) * 8);
    for (llama_token id = 0; id < n_vocab; ++id) {
      const std::string& piece = vocab_->token_to_piece(id);
      table_.offset[id] = static_cast<uint32_t>(table_.code_points.size());
      if (vocab_->is_eog(id)) {
        table_.kind[id] = kEog;
      } else if (piece.empty() || piece[0] == 0) {
        table_.kind[id] = kEmpty;
      } else {
        table_.kind[id] = kPlain;
      }
      DecodeFresh(piece, table_.code_points, table_.partial_value[id], table_.partial_remain[id]);
    }
  });
  return table_;
}

struct GrammarConstraint::Scratch {
  llama_grammar_candidates candidates;
  std::vector<llama_token_data> check;  // LLAMAD_GRAMMAR_CHECK: llama.cpp's own mask of the same candidates
};

GrammarConstraint::GrammarConstraint(const llama_vocab* vocab, const VocabPieces* pieces, const std::string& gbnf,
                                     bool lazy, const std::vector<std::string>& trigger_patterns,
                                     const std::vector<llama_token>& trigger_tokens)
    : pieces_(pieces), check_(CheckRequested()), scratch_(std::make_unique<Scratch>()) {
  std::vector<const char*> patterns;
  patterns.reserve(trigger_patterns.size());
  for (const std::string& p : trigger_patterns) patterns.push_back(p.c_str());
  try {
    grammar_ = llama_grammar_init_impl(vocab, gbnf.c_str(), "root", lazy, patterns.data(), patterns.size(),
                                       trigger_tokens.data(), trigger_tokens.size());
  } catch (const std::exception& e) {  // std::regex_error of a trigger pattern
    throw LlamaError(ErrorCode::kInvalidArgument, std::string("invalid grammar trigger pattern: ") + e.what());
  }
  if (grammar_ == nullptr) throw LlamaError(ErrorCode::kInvalidArgument, "invalid GBNF grammar or trigger pattern");
}

GrammarConstraint::~GrammarConstraint() {
  if (grammar_ != nullptr) llama_grammar_free_impl(grammar_);
}

void GrammarConstraint::Accept(llama_token token) { llama_grammar_accept_impl(*grammar_, token); }

void GrammarConstraint::ApplyDecoded(llama_token_data_array* cur) {
  const llama_grammar& grammar = *grammar_;
  if (grammar.stacks.empty()) {  // no continuation at all (llama.cpp would assert): nothing is allowed
    for (size_t i = 0; i < cur->size; ++i) cur->data[i].logit = -INFINITY;
    return;
  }
  bool allow_eog = false;
  for (const llama_grammar_stack& stack : grammar.stacks) allow_eog = allow_eog || stack.empty();
  const VocabPieces::Table& table = pieces_->Get();
  llama_grammar_candidates& candidates = scratch_->candidates;
  candidates.clear();
  for (size_t i = 0; i < cur->size; ++i) {
    const llama_token id = cur->data[i].id;
    switch (table.kind[id]) {
      case VocabPieces::kEog:
        if (!allow_eog) cur->data[i].logit = -INFINITY;
        break;
      case VocabPieces::kEmpty:
        cur->data[i].logit = -INFINITY;
        break;
      default:
        candidates.push_back({i, table.code_points.data() + table.offset[id],
                              llama_partial_utf8{table.partial_value[id], table.partial_remain[id]}, id});
    }
  }
  if (candidates.empty()) return;
  // Each stack rejects among what the stacks before it rejected: a candidate survives when any stack accepts it.
  llama_grammar_candidates rejects =
      llama_grammar_reject_candidates_for_stack(grammar.rules, grammar.stacks.front(), candidates);
  for (size_t s = 1; s < grammar.stacks.size() && !rejects.empty(); ++s) {
    rejects = llama_grammar_reject_candidates_for_stack(grammar.rules, grammar.stacks[s], rejects);
  }
  for (const llama_grammar_candidate& reject : rejects) cur->data[reject.index].logit = -INFINITY;
}

void GrammarConstraint::Apply(llama_token_data_array* cur) {
  if (grammar_->awaiting_trigger) return;
  if (grammar_->partial_utf8.n_remain > 0) {  // a character continues from the last token: llama.cpp decodes it
    llama_grammar_apply_impl(*grammar_, cur);
    return;
  }
  if (!check_) {
    ApplyDecoded(cur);
    return;
  }
  std::vector<llama_token_data>& theirs = scratch_->check;
  theirs.assign(cur->data, cur->data + cur->size);
  llama_token_data_array theirs_array = {theirs.data(), theirs.size(), cur->selected, cur->sorted};
  llama_grammar_apply_impl(*grammar_, &theirs_array);
  ApplyDecoded(cur);
  for (size_t i = 0; i < cur->size; ++i) {
    if (std::isinf(cur->data[i].logit) != std::isinf(theirs[i].logit)) {
      throw LlamaError(ErrorCode::kInternal, "grammar mask differs from llama.cpp's at token " +
                                                 std::to_string(cur->data[i].id) + " (LLAMAD_GRAMMAR_CHECK)");
    }
  }
}

}  // namespace llamad
