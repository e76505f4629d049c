/**
 * Thrown by readGguf when a file is not a well-formed GGUF file (bad magic, unsupported version, truncated data,
 * counts or lengths that cannot fit in the file, invalid types, ...). I/O errors (ENOENT, EACCES) are not wrapped.
 */
export class GgufFormatError extends Error {
  override readonly name = 'GgufFormatError';

  /**
   * @param path the file that was being read
   * @param offset byte offset in the file where the problem was found, when known
   * @param detail what is wrong, e.g. "bad magic 0x00000000"
   */
  constructor(
    readonly path: string,
    readonly offset: number | undefined,
    readonly detail: string,
  ) {
    super(`invalid GGUF file ${path}: ${detail}${offset === undefined ? '' : ` (at byte ${offset})`}`);
  }
}
