#include "text_stream.h"

#include <algorithm>
#include <cstdint>

namespace llamad {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t SanitizeUtf8(const char* data, size_t size, bool final, std::string* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  size_t i = 0;
  while (i < size) {
    const uint8_t lead = bytes[i];
    if (lead < 0x80) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    size_t need = 0;
    uint8_t lower = 0x80;
    uint8_t upper = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      need = 2;
      if (lead == 0xE0) lower = 0xA0;
      if (lead == 0xED) upper = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      need = 3;
      if (lead == 0xF0) lower = 0x90;
      if (lead == 0xF4) upper = 0x8F;
    } else {
      out->append(kReplacement);  // stray continuation byte or a byte that never starts a sequence
      ++i;
      continue;
    }
    size_t seen = 1;  // bytes of this sequence that are valid so far
    bool ill_formed = false;
    while (seen <= need && i + seen < size) {
      const uint8_t byte = bytes[i + seen];
      const uint8_t lo = seen == 1 ? lower : 0x80;
      const uint8_t hi = seen == 1 ? upper : 0xBF;
      if (byte < lo || byte > hi) {
        ill_formed = true;
        break;
      }
      ++seen;
    }
    if (ill_formed) {
      out->append(kReplacement);  // the maximal valid subpart becomes one U+FFFD; the offending byte starts over
      i += seen;
      continue;
    }
    if (seen <= need) {  // input ends inside the sequence
      if (!final) return i;
      out->append(kReplacement);
      return size;
    }
    out->append(data + i, need + 1);
    i += need + 1;
  }
  return size;
}

TextStream::TextStream(const std::vector<std::string>& stops) {
  for (const std::string& stop : stops) {
    if (!stop.empty()) stops_.push_back(stop);
  }
}

TextStream::Chunk TextStream::Push(const std::string& piece) {
  Chunk chunk;
  raw_ += piece;
  std::string decoded;
  const size_t used = SanitizeUtf8(raw_.data(), raw_.size(), false, &decoded);
  raw_.erase(0, used);
  if (stops_.empty()) {
    chunk.text = std::move(decoded);
    return chunk;
  }
  held_ += decoded;

  // A complete stop string: the earliest one wins.
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& stop : stops_) {
    const size_t pos = held_.find(stop);
    if (pos != std::string::npos && (best == std::string::npos || pos < best)) {
      best = pos;
      best_stop = &stop;
    }
  }
  if (best_stop != nullptr) {
    chunk.text = held_.substr(0, best);
    chunk.stopped = true;
    chunk.stop_string = *best_stop;
    held_.clear();
    raw_.clear();
    return chunk;
  }

  // Keep the longest suffix that is a proper prefix of some stop string; it starts at a character boundary
  // because the stop strings are valid UTF-8.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  chunk.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return chunk;
}

std::string TextStream::Flush() {
  std::string out = std::move(held_);
  held_.clear();
  SanitizeUtf8(raw_.data(), raw_.size(), true, &out);
  raw_.clear();
  return out;
}

}  // namespace llamad
