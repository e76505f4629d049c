// Audio files of media tasks (WAV, MP3, FLAC) decoded to mono float PCM at the projector's sample rate, with a bound on
// their length checked before the samples are allocated. Pure C++ (no napi.h, no mtmd).
#ifndef LLAMAD_NATIVE_AUDIO_DECODE_H_
#define LLAMAD_NATIVE_AUDIO_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llamad {

// Whether `bytes` start like an audio file that mtmd handles (the sniff of mtmd-helper.cpp's is_audio_file):
// RIFF..WAVE, an ID3 tag or an MPEG frame sync (MP3), fLaC. Anything else in a media task is decoded as an image.
bool IsAudioFile(const std::string& bytes);

struct DecodedAudio {
  enum class Status {
    kOk,
    kUndecodable,  // miniaudio cannot open or read it
    kEmpty,        // opened, but holds no sample
    kTooLong,      // longer than the bound: `samples` stays empty
  };
  Status status = Status::kUndecodable;
  std::vector<float> samples;  // mono, at the requested sample rate (kOk)
  double seconds = 0;          // length at the requested rate (kOk, kTooLong)
};

// Decodes `bytes` (an audio file: IsAudioFile) to mono f32 at `sample_rate` Hz (miniaudio: channels mixed down,
// linear resampling). `max_seconds` > 0 bounds the length: a file whose header says it is longer is refused before any
// sample is allocated (kTooLong, with its length), and one without a known length is refused as soon as the decoded
// samples pass the bound (its length then counted to the end without keeping samples). 0 = no bound. Never throws
// except std::bad_alloc.
DecodedAudio DecodeAudio(const std::string& bytes, int32_t sample_rate, double max_seconds);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_AUDIO_DECODE_H_
