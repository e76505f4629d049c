// Media prompts evaluated in a slot, one unit of work per engine step: a text chunk goes through the shared batch like
// any prompt (BuildBatch, at most n_batch tokens a step), and at an image or audio chunk each step does either its
// encode (mtmd_encode_chunk: one encode cannot be split) or the decode of its next <= n_batch embeddings, in a
// llama_batch of its own. The other slots decode in between, so a long clip holds them up for one unit at a time.
// Engine methods, run on the decode thread. The embeddings decode follows what mtmd-helper.cpp's
// mtmd_helper_decode_image_chunk does: M-RoPE positions (2-D for images, 1-D for audio) and non-causal attention
// where the projector asks for them.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"

namespace llamad {

namespace {

// Index of the chunk of `media` that holds prompt position `pos` (< the prompt's size).
size_t ChunkAt(const MediaPrompt& media, size_t pos) {
  const auto it = std::upper_bound(media.chunk_pos.begin(), media.chunk_pos.end(), pos);
  return static_cast<size_t>(it - media.chunk_pos.begin()) - 1;
}

}  // namespace

size_t Engine::MediaTextEnd(const Slot& slot) const {
  const MediaPrompt& media = *slot.task->params.media;
  const size_t pos = slot.n_prompt_done;
  if (pos >= media.chunk_pos.back()) return pos;
  const size_t c = ChunkAt(media, pos);
  const mtmd_input_chunk* chunk = mtmd_input_chunks_get(media.chunks, c);
  return mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT ? media.chunk_pos[c + 1] : pos;
}

size_t Engine::MediaPrefix(const Slot& slot, const TaskParams& params) const {
  if (slot.cache_scope != params.cache_scope) return 0;
  const MediaPrompt& media = *params.media;
  const std::vector<llama_token>& prompt = params.tokens;
  const size_t n = std::min(prompt.size(), slot.cache.size());
  size_t i = 0;
  while (i < n) {
    if (prompt[i] != LLAMA_TOKEN_NULL) {
      if (slot.cache[i] != prompt[i]) break;
      ++i;
      continue;
    }
    // A media chunk starts here: the slot must hold the same content at the same positions.
    const size_t c = ChunkAt(media, i);
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(media.chunks, c);
    const char* id = mtmd_input_chunk_get_id(chunk);
    const size_t n_pos = media.chunk_pos[c + 1] - media.chunk_pos[c];
    if (media.chunk_pos[c] != i || id == nullptr || *id == '\0' || i + n_pos > n) break;
    const auto span = std::find_if(slot.media_spans.begin(), slot.media_spans.end(), [&](const Slot::MediaSpan& s) {
      return s.pos == i && s.n_pos == n_pos && s.id == id;
    });
    if (span == slot.media_spans.end()) break;
    const auto end = slot.cache.begin() + static_cast<std::ptrdiff_t>(i + n_pos);
    if (!std::all_of(slot.cache.begin() + static_cast<std::ptrdiff_t>(i), end,
                     [](llama_token t) { return t == LLAMA_TOKEN_NULL; })) {
      break;  // the span was overwritten since
    }
    i += n_pos;
  }
  return i;
}

void Engine::ClearMediaProgress(Slot& slot) {
  // Embeddings of an unfinished chunk sit in the KV cache beyond `cache`: drop them so that `cache` mirrors the cache.
  if (slot.media_chunk != Slot::kNoChunk && slot.media_embd_done > 0) {
    llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(slot.cache.size()), -1);
  }
  slot.media_chunk = Slot::kNoChunk;
  slot.media_embd_done = 0;
  slot.media_embd.clear();
  slot.media_embd.shrink_to_fit();
}

void Engine::EvalMediaUnit(Slot& slot) {
  const MediaPrompt& media = *slot.task->params.media;
  slot.media_unit_done = true;
  if (!slot.prompt_started) {
    slot.prompt_started = true;
    slot.prompt_start = Clock::now();
  }
  const size_t c = ChunkAt(media, slot.n_prompt_done);
  const size_t start = media.chunk_pos[c];
  if (slot.n_prompt_done != start || slot.cache.size() != start) {
    // Only after a repaired partial decode: start the chunk over.
    ClearMediaProgress(slot);
    llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(start), -1);
    slot.cache.resize(std::min(slot.cache.size(), start));
    slot.n_prompt_done = slot.cache.size();
    if (slot.n_prompt_done != start) {
      llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
      slot.cache.clear();
      Fail(slot, ErrorCode::kDecodeFailed, "the sequence of a prompt with media lost its KV entries");
    }
    return;
  }
  const mtmd_input_chunk* chunk = mtmd_input_chunks_get(media.chunks, c);
  const bool audio = mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_AUDIO;
  const char* kind = audio ? "audio" : "image";
  const int32_t n_tokens = static_cast<int32_t>(mtmd_input_chunk_get_n_tokens(chunk));
  const int32_t n_embd = llama_model_n_embd_inp(model_);
  auto fail = [&](const std::string& message) {
    ClearMediaProgress(slot);
    llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
    slot.cache.clear();
    if (slot.task->cancelled.load() || stop_requested_.load()) {
      Finish(slot, StopReason::kCancelled);
    } else {
      Fail(slot, ErrorCode::kDecodeFailed, message);
    }
  };

  if (slot.media_chunk != c) {
    // The encode: the projector's embeddings of the whole chunk, kept by the slot until they are decoded.
    const int32_t rc = mtmd_encode_chunk(mtmd_, chunk);
    if (rc != 0) {
      fail(std::string("encoding the ") + kind + " failed (mtmd_encode_chunk status " + std::to_string(rc) + ")");
      return;
    }
    const float* embd = mtmd_get_output_embd(mtmd_);
    slot.media_embd.assign(embd, embd + static_cast<size_t>(n_tokens) * static_cast<size_t>(n_embd));
    slot.media_chunk = c;
    slot.media_embd_done = 0;
    return;
  }

  // The decode of the next embeddings, at the chunk's positions.
  const int32_t first = slot.media_embd_done;
  const int32_t n = std::min(n_batch_, n_tokens - first);
  const int32_t n_pos_per_embd = mtmd_decode_use_mrope(mtmd_) ? 4 : 1;
  media_pos_.assign(static_cast<size_t>(n) * n_pos_per_embd, 0);
  if (n_pos_per_embd == 1) {
    for (int32_t j = 0; j < n; ++j) media_pos_[j] = static_cast<llama_pos>(start) + first + j;
  } else if (audio) {
    for (int32_t d = 0; d < 4; ++d) {
      for (int32_t j = 0; j < n; ++j) media_pos_[d * n + j] = static_cast<llama_pos>(start) + first + j;
    }
  } else {
    const mtmd_image_tokens* image = mtmd_input_chunk_get_tokens_image(chunk);
    for (int32_t j = 0; j < n; ++j) {
      const mtmd_decoder_pos p =
          mtmd_image_tokens_get_decoder_pos(image, static_cast<llama_pos>(start), static_cast<size_t>(first + j));
      media_pos_[j] = static_cast<llama_pos>(p.t);
      media_pos_[n + j] = static_cast<llama_pos>(p.y);
      media_pos_[2 * n + j] = static_cast<llama_pos>(p.x);
      media_pos_[3 * n + j] = static_cast<llama_pos>(p.z);
    }
  }
  media_seq_ = slot.seq_id;
  media_n_seq_id_.assign(n, 1);
  media_seq_ids_.assign(n, &media_seq_);
  media_logits_.assign(n, 0);
  llama_batch batch{};
  batch.n_tokens = n;
  batch.embd = slot.media_embd.data() + static_cast<size_t>(first) * n_embd;
  batch.pos = media_pos_.data();
  batch.n_seq_id = media_n_seq_id_.data();
  batch.seq_id = media_seq_ids_.data();
  batch.logits = media_logits_.data();
  const bool non_causal = mtmd_decode_use_non_causal(mtmd_, chunk);
  if (non_causal) llama_set_causal_attn(ctx_, false);
  batch_slots_.clear();
  batch_tasks_.assign(1, slot.task.get());  // a cancel aborts this decode
  const int32_t rc = llama_decode(ctx_, batch);
  if (non_causal) llama_set_causal_attn(ctx_, true);
  aborting_.store(false);
  batch_tasks_.clear();
  if (rc != 0) {
    fail(std::string("decoding the ") + kind + " embeddings failed (llama_decode status " + std::to_string(rc) + ")");
    return;
  }
  slot.media_embd_done += n;
  if (slot.media_embd_done < n_tokens) return;
  // The chunk is in: its positions join the slot's cache as LLAMA_TOKEN_NULL (never matched by a text prefix).
  const size_t n_pos = static_cast<size_t>(mtmd_input_chunk_get_n_pos(chunk));
  slot.media_chunk = Slot::kNoChunk;  // complete: nothing beyond `cache` to drop
  ClearMediaProgress(slot);
  auto& spans = slot.media_spans;
  spans.erase(
      std::remove_if(spans.begin(), spans.end(), [&](const Slot::MediaSpan& s) { return s.pos + s.n_pos > start; }),
      spans.end());
  const char* id = mtmd_input_chunk_get_id(chunk);
  if (id != nullptr && *id != '\0') spans.push_back({start, n_pos, id});
  slot.cache.resize(start + n_pos, LLAMA_TOKEN_NULL);
  slot.n_prompt_done = slot.cache.size();
}

}  // namespace llamad
