import { DaemonError, InternalError } from '../common/errors';
import { GgufFormatError } from './gguf';

/**
 * Error texts of the model store that never reveal a server path (reference/ollama-api.md §5.2; Ollama's
 * CVE-2024-39719 was an error message telling a remote client whether a path exists). Node's file-system errors
 * carry the absolute path in their message (`ENOENT: no such file or directory, open '/…/blobs/sha256-…'`), and
 * GgufFormatError names the file: both are reduced to what went wrong.
 */

/** Neutral descriptions of the errno codes a store operation meets. */
const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'file exists',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in system',
  EIO: 'input/output error',
  EXDEV: 'cross-device link',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many levels of symbolic links',
  ECONNRESET: 'connection reset',
};

/** An absolute POSIX path (or Windows drive path) standing on its own in a message. */
const ABSOLUTE_PATH = /(^|[\s'"`(=,])((?:\/|[A-Za-z]:\\)[^\s'"`),]*)/g;

/** Replaces every absolute path in a message by `<path>`. */
export function redactPaths(message: string): string {
  return message.replace(ABSOLUTE_PATH, (_m, lead: string) => `${lead}<path>`);
}

/**
 * What went wrong, in words that name no file: an errno phrase for Node system errors (`no space left on device`),
 * the detail of a GgufFormatError (`invalid GGUF file: bad magic …`), otherwise the message with absolute paths
 * replaced by `<path>`.
 */
export function describeIoError(err: unknown): string {
  if (err instanceof GgufFormatError) {
    return `invalid GGUF file: ${err.detail}${err.offset === undefined ? '' : ` (at byte ${err.offset})`}`;
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return ERRNO_TEXT[code] ?? code.toLowerCase();
  const message = err instanceof Error ? err.message : String(err);
  return redactPaths(message || 'unknown error');
}

/**
 * Wraps a failure of a store operation for the client: DaemonErrors pass unchanged (their messages are written
 * without server paths); anything else becomes an InternalError (500) `<action>: <describeIoError>` carrying the
 * original as `cause` (logged by the exception filter).
 * @param action what was being done, e.g. `cannot write blob` (no path).
 */
export function storeError(err: unknown, action: string): DaemonError {
  if (err instanceof DaemonError) return err;
  return new InternalError(`${action}: ${describeIoError(err)}`, { cause: err });
}
