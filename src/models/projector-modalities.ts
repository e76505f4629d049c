/**
 * Which encoders a multimodal projector GGUF (Modelfile second FROM, layer `application/vnd.ollama.image.projector`)
 * carries, from its header keys as llama.cpp's clip.cpp reads them (clip_model_loader: `clip.has_vision_encoder`,
 * `clip.has_audio_encoder`, both default false). A projector written before those keys existed (llava-era files,
 * which have `clip.vision.*` keys only) is a vision projector, as Ollama's capability rule has always treated every
 * projector layer (reference/ollama-api.md §8.7).
 */
export interface ProjectorModalities {
  /** An image encoder (`clip.has_vision_encoder`, or a legacy projector): the `vision` capability. */
  vision: boolean;
  /** An audio encoder (`clip.has_audio_encoder`: Whisper-type, Ultravox, Qwen2-Audio, Voxtral…): `audio`. */
  audio: boolean;
}

/**
 * The encoders of one projector from its GGUF metadata (see {@link ProjectorModalities}).
 * @param metadata the header's key/value pairs (gguf-reader's GgufFile.metadata)
 */
export function projectorModalities(metadata: Readonly<Record<string, unknown>>): ProjectorModalities {
  const vision = metadata['clip.has_vision_encoder'];
  const audio = metadata['clip.has_audio_encoder'];
  if (vision === undefined && audio === undefined) return { vision: true, audio: false };
  return { vision: vision === true, audio: audio === true };
}
