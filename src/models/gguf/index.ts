export { GgufValueType, type GgufFile, type GgufTensorInfo, type GgufValue } from './gguf.types';
export { GgufFormatError } from './gguf-format.error';
export { FACTS_MAX_ARRAY_ITEMS, isGgufFile, readGguf, type ReadGgufOptions } from './gguf-reader';
export { fileTypeName, formatParameterCount, ggmlTypeName, modelDetails, type GgufModelDetails } from './gguf-details';
export { GGML_TYPE_F16, GGML_TYPE_F32, GGML_TYPES, ggmlTensorBytes, type GgmlTypeInfo } from './ggml-types';
export { float16BitsToFloat32, float32ArrayToFloat16, float32ToFloat16Bits } from './float16.util';
