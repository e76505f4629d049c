// Audio decoding of media tasks (audio_decode.h) over miniaudio (vendor/llama.cpp/vendor/miniaudio). mtmd-helper.cpp
// compiles miniaudio with MA_API static, so its copy cannot be linked: this file compiles the decoders once more, also
// with internal linkage (MA_API static) and without devices, encoders, the resource manager, node graph, engine and
// generators, so that no ma_* symbol leaves this translation unit (its one global variable is renamed).
#include "audio_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#define MINIAUDIO_IMPLEMENTATION
#define MA_NO_ENCODING
#define MA_NO_DEVICE_IO
#define MA_NO_RESOURCE_MANAGER
#define MA_NO_NODE_GRAPH
#define MA_NO_ENGINE
#define MA_NO_GENERATION
#define MA_API static
// miniaudio's one global outside MA_API: renamed so that it does not clash with mtmd-helper.cpp's copy.
#define ma_atomic_global_lock llamad_ma_atomic_global_lock
#include "miniaudio/miniaudio.h"

namespace llamad {

bool IsAudioFile(const std::string& bytes) {
  if (bytes.size() < 12) return false;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const bool wav = std::memcmp(b, "RIFF", 4) == 0 && std::memcmp(b + 8, "WAVE", 4) == 0;
  const bool mp3 = std::memcmp(b, "ID3", 3) == 0 || (b[0] == 0xFF && (b[1] & 0xE0) == 0xE0);
  const bool flac = std::memcmp(b, "fLaC", 4) == 0;
  return wav || mp3 || flac;
}

namespace {

struct DecoderGuard {
  ma_decoder decoder;
  bool open = false;
  ~DecoderGuard() {
    if (open) ma_decoder_uninit(&decoder);
  }
};

}  // namespace

DecodedAudio DecodeAudio(const std::string& bytes, int32_t sample_rate, double max_seconds) {
  DecodedAudio out;
  if (sample_rate <= 0) return out;
  DecoderGuard guard;
  const ma_decoder_config config = ma_decoder_config_init(ma_format_f32, 1, static_cast<ma_uint32>(sample_rate));
  if (ma_decoder_init_memory(bytes.data(), bytes.size(), &config, &guard.decoder) != MA_SUCCESS) return out;
  guard.open = true;
  const double rate = static_cast<double>(sample_rate);
  // Frames allowed (0 = no bound).
  const ma_uint64 max_frames = max_seconds > 0 ? static_cast<ma_uint64>(std::floor(max_seconds * rate)) : 0;
  ma_uint64 length = 0;
  if (ma_decoder_get_length_in_pcm_frames(&guard.decoder, &length) != MA_SUCCESS) length = 0;  // unknown
  if (max_frames > 0 && length > max_frames) {
    out.status = DecodedAudio::Status::kTooLong;
    out.seconds = static_cast<double>(length) / rate;
    return out;
  }
  // Reserve what the header says only when it is plausible for the file's size (a lying header must not allocate
  // gigabytes); otherwise the vector grows with what is really decoded.
  if (length > 0 && length <= 64 * static_cast<ma_uint64>(bytes.size())) out.samples.reserve(length);
  constexpr ma_uint64 kBlock = 16384;
  float block[kBlock];
  ma_uint64 total = 0;
  for (;;) {
    ma_uint64 read = 0;
    const ma_result rc = ma_decoder_read_pcm_frames(&guard.decoder, block, kBlock, &read);
    if (rc != MA_SUCCESS && rc != MA_AT_END) {
      if (total + read == 0) return out;  // kUndecodable
      break;                              // a truncated file: keep what decoded
    }
    total += read;
    if (max_frames > 0 && total > max_frames) {
      out.samples.clear();
      out.samples.shrink_to_fit();
    } else {
      out.samples.insert(out.samples.end(), block, block + read);
    }
    if (rc == MA_AT_END || read < kBlock) break;
  }
  out.seconds = static_cast<double>(total) / rate;
  if (max_frames > 0 && total > max_frames) {
    out.status = DecodedAudio::Status::kTooLong;
  } else if (total == 0) {
    out.status = DecodedAudio::Status::kEmpty;
  } else {
    out.status = DecodedAudio::Status::kOk;
  }
  return out;
}

}  // namespace llamad
