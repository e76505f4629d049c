import { GgufValueType } from '../../src/models/gguf';
import { GgufKv, writeGguf } from '../../scripts/gguf-writer';

/** Options of a metadata-only GGUF fixture. */
export interface TinyGgufOptions {
  architecture?: string;
  contextLength?: number;
  chatTemplate?: string;
  poolingType?: number;
  /** general.file_type (1 = F16). */
  fileType?: number;
  /** Extra array metadata, to check model_info's long-array elision. */
  tokens?: string[];
}

/**
 * Writes a small valid GGUF file (metadata + one 32-element F32 tensor) for tests that need a real GGUF on disk but
 * no real weights: the store, create, show and the services over the FakeBinding.
 */
export async function writeTinyGguf(path: string, options: TinyGgufOptions = {}): Promise<void> {
  const arch = options.architecture ?? 'llama';
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: arch },
    { key: 'general.name', type: GgufValueType.STRING, value: 'tiny-test' },
    { key: 'general.file_type', type: GgufValueType.UINT32, value: options.fileType ?? 1 },
    { key: 'general.parameter_count', type: GgufValueType.UINT64, value: 4_390_000 },
    { key: `${arch}.context_length`, type: GgufValueType.UINT32, value: options.contextLength ?? 2048 },
    { key: `${arch}.embedding_length`, type: GgufValueType.UINT32, value: 128 },
  ];
  if (options.poolingType !== undefined) {
    kvs.push({ key: `${arch}.pooling_type`, type: GgufValueType.UINT32, value: options.poolingType });
  }
  kvs.push({
    key: 'tokenizer.ggml.tokens',
    type: GgufValueType.ARRAY,
    itemType: GgufValueType.STRING,
    value: options.tokens ?? ['<s>', '</s>', 'a', 'b', 'c', 'd', 'e'],
  });
  if (options.chatTemplate !== undefined) {
    kvs.push({ key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: options.chatTemplate });
  }
  await writeGguf(path, kvs, [
    {
      name: 'token_embd.weight',
      shape: [32],
      type: 0,
      fill: (out) => new Float32Array(out.buffer, out.byteOffset, 32).fill(0.5),
    },
  ]);
}
