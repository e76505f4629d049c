// Incremental detokenized text: UTF-8 validation with holdback and native stop strings. Pure C++.
#ifndef LLAMAD_NATIVE_TEXT_STREAM_H_
#define LLAMAD_NATIVE_TEXT_STREAM_H_

#include <cstddef>
#include <string>
#include <vector>

namespace llamad {

// Appends the valid UTF-8 of bytes [data, data + size) to `out`, replacing every ill-formed subsequence with U+FFFD
// exactly as the WHATWG decoder (and therefore V8) does. When `final` is false, an incomplete but so far valid
// sequence at the end is not consumed. Returns the number of bytes consumed.
size_t SanitizeUtf8(const char* data, size_t size, bool final, std::string* out);

// Turns the byte pieces of sampled tokens into text deltas that are always valid UTF-8 and never contain a stop
// string. Holds back (a) an incomplete UTF-8 sequence and (b) a suffix that could be the start of a stop string.
class TextStream {
 public:
  struct Chunk {
    std::string text;         // text that may be emitted now (possibly empty)
    bool stopped = false;     // a stop string completed; `text` is everything before it
    std::string stop_string;  // which one, when stopped
  };

  // `stops`: stop strings; empty strings are ignored.
  explicit TextStream(const std::vector<std::string>& stops);

  // Adds the bytes of one token piece.
  Chunk Push(const std::string& piece);

  // Returns everything still held back (incomplete UTF-8 becomes U+FFFD) and empties the stream.
  std::string Flush();

 private:
  std::vector<std::string> stops_;
  std::string raw_;   // undecoded tail: an incomplete UTF-8 sequence
  std::string held_;  // decoded text that may be the beginning of a stop string
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_TEXT_STREAM_H_
