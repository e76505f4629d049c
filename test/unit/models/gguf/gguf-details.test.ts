import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fileTypeName,
  formatParameterCount,
  ggmlTensorBytes,
  ggmlTypeName,
  GgufValueType,
  modelDetails,
  type GgufFile,
  type GgufTensorInfo,
} from '../../../../src/models/gguf';

describe('ggmlTypeName', () => {
  it('names ggml tensor types', () => {
    const table: [number, string][] = [
      [0, 'F32'],
      [1, 'F16'],
      [2, 'Q4_0'],
      [3, 'Q4_1'],
      [6, 'Q5_0'],
      [7, 'Q5_1'],
      [8, 'Q8_0'],
      [10, 'Q2_K'],
      [11, 'Q3_K'],
      [12, 'Q4_K'],
      [13, 'Q5_K'],
      [14, 'Q6_K'],
      [20, 'IQ4_NL'],
      [23, 'IQ4_XS'],
      [28, 'F64'],
      [30, 'BF16'],
      [39, 'MXFP4'],
      [4, 'unknown'],
      [31, 'unknown'],
      [999, 'unknown'],
    ];
    for (const [type, name] of table) assert.equal(ggmlTypeName(type), name, `type ${type}`);
  });

  it('computes tensor byte sizes from block layouts', () => {
    assert.equal(ggmlTensorBytes(0, [128, 3]), 128 * 3 * 4);
    assert.equal(ggmlTensorBytes(1, [128, 3]), 128 * 3 * 2);
    assert.equal(ggmlTensorBytes(2, [2048, 2048]), (2048 * 2048 * 18) / 32);
    assert.equal(ggmlTensorBytes(8, [64]), 2 * 34);
    assert.equal(ggmlTensorBytes(12, [256, 2]), 2 * 144);
    assert.equal(ggmlTensorBytes(14, [256]), 210);
    assert.equal(ggmlTensorBytes(2, [48]), null);
    assert.equal(ggmlTensorBytes(4, [32]), null);
  });
});

describe('fileTypeName', () => {
  it('names llama_ftype values like Ollama quantization levels', () => {
    const table: [number, string][] = [
      [0, 'F32'],
      [1, 'F16'],
      [2, 'Q4_0'],
      [3, 'Q4_1'],
      [7, 'Q8_0'],
      [8, 'Q5_0'],
      [9, 'Q5_1'],
      [10, 'Q2_K'],
      [12, 'Q3_K_M'],
      [14, 'Q4_K_S'],
      [15, 'Q4_K_M'],
      [17, 'Q5_K_M'],
      [18, 'Q6_K'],
      [30, 'IQ4_XS'],
      [32, 'BF16'],
      [38, 'MXFP4'],
      [5, 'unknown'],
      [33, 'unknown'],
      [1024, 'unknown'],
    ];
    for (const [ft, name] of table) assert.equal(fileTypeName(ft), name, `file type ${ft}`);
  });
});

describe('formatParameterCount', () => {
  it("matches Ollama's format.HumanNumber", () => {
    const table: [number, string][] = [
      // Ollama's own test vectors (format/format_test.go).
      [0, '0'],
      [999, '999'],
      [1000, '1K'],
      [1001, '1K'],
      [1_000_000, '1M'],
      [125_000_000, '125M'],
      [500_500_000, '500.50M'],
      [500_550_000, '500.55M'],
      [1_000_000_000, '1B'],
      [2_800_000_000, '2.8B'],
      [2_850_000_000, '2.9B'],
      [1_000_000_000_000, '1000B'],
      // Real models as Ollama lists them.
      [8_030_261_248, '8.0B'],
      [3_212_749_824, '3.2B'],
      [494_032_768, '494.03M'],
      [567_000_000, '567M'],
      [1_040_000_000, '1.0B'],
      [4_390_912, '4.39M'],
      [4_400_000, '4.40M'],
      // Go's %f rounds exact ties to even.
      [2_250_000_000, '2.2B'],
      [2_350_000_000, '2.4B'],
      [2_450_000_000, '2.5B'], // 2.45 is stored as 2.4500000000000001776…: not a tie
      [1500, '2K'],
      [2500, '2K'],
      [1499, '1K'],
    ];
    for (const [n, text] of table) assert.equal(formatParameterCount(n), text, String(n));
  });

  it('rejects negative and non-finite counts', () => {
    assert.throws(() => formatParameterCount(-1), RangeError);
    assert.throws(() => formatParameterCount(Number.NaN), RangeError);
  });
});

function tensor(name: string, shape: number[], type: number): GgufTensorInfo {
  return { name, shape, type, typeName: ggmlTypeName(type), offset: 0 };
}

function file(metadata: GgufFile['metadata'], tensors: GgufTensorInfo[] = []): GgufFile {
  const types: GgufFile['types'] = {};
  for (const [k, v] of Object.entries(metadata)) {
    types[k] = { type: typeof v === 'string' ? GgufValueType.STRING : GgufValueType.UINT32 };
  }
  return { version: 3, metadata, types, tensors, alignment: 32, dataOffset: 0 };
}

describe('modelDetails', () => {
  it('uses general.parameter_count and general.file_type when present', () => {
    const d = modelDetails(
      file(
        {
          'general.architecture': 'qwen2',
          'general.parameter_count': 494_032_768,
          'general.file_type': 15,
          'qwen2.context_length': 32768,
          'qwen2.embedding_length': 896,
          'tokenizer.chat_template': '{{ messages }}',
        },
        [tensor('token_embd.weight', [896, 1000], 12)],
      ),
    );
    assert.deepEqual(d, {
      architecture: 'qwen2',
      parameterCount: 494_032_768,
      fileType: 'Q4_K_M',
      contextLength: 32768,
      embeddingLength: 896,
      chatTemplate: '{{ messages }}',
    });
  });

  it('accepts bigint parameter counts', () => {
    const d = modelDetails(file({ 'general.architecture': 'llama', 'general.parameter_count': 70_553_706_496n }));
    assert.equal(d.parameterCount, 70_553_706_496);
  });

  it('computes the parameter count and infers the file type from the tensors', () => {
    const tensors = [
      tensor('token_embd.weight', [64, 100], 2),
      tensor('blk.0.attn_norm.weight', [64], 0),
      tensor('blk.0.ffn_norm.weight', [64], 0),
      tensor('blk.0.ffn_norm.bias', [64], 0),
      tensor('blk.0.attn_q.weight', [64, 64], 2),
      tensor('blk.0.attn_v.weight', [64, 64], 8),
    ];
    const d = modelDetails(file({ 'general.architecture': 'llama' }, tensors));
    assert.equal(d.parameterCount, 6400 + 3 * 64 + 2 * 4096);
    assert.equal(d.fileType, 'Q4_0');
    assert.equal(modelDetails(file({}, [tensor('a', [32, 2], 12), tensor('b', [32, 2], 12)])).fileType, 'Q4_K_M');
    assert.equal(modelDetails(file({}, [tensor('a', [32], 0)])).fileType, 'F32');
    assert.equal(modelDetails(file({ 'general.file_type': 999 }, [tensor('a', [32, 2], 30)])).fileType, 'BF16');
  });

  it('tolerates missing metadata', () => {
    assert.deepEqual(modelDetails(file({})), { architecture: 'unknown', parameterCount: 0, fileType: 'unknown' });
  });

  it('reads pooling type for embedding models', () => {
    const d = modelDetails(file({ 'general.architecture': 'bert', 'bert.pooling_type': 1 }));
    assert.equal(d.poolingType, 1);
  });
});
