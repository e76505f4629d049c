// llama.cpp / ggml log routing (process-wide, as llama_log_set is).
#ifndef LLAMAD_NATIVE_LOGGER_H_
#define LLAMAD_NATIVE_LOGGER_H_

#include <napi.h>

namespace llamad {

// Installs the process-wide llama/ggml log callback. Without a JS logger only GGML_LOG_LEVEL_ERROR lines are
// written to stderr; everything else is dropped.
void InstallLogCallback();

// setLogger(fn | null): routes every log line to fn(level, text) on the JS thread of the calling environment
// through an unreferenced thread-safe function (it never keeps the process alive); null restores silence.
Napi::Value SetLogger(const Napi::CallbackInfo& info);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_LOGGER_H_
