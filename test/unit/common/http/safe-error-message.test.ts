import { BadRequestException, Logger } from '@nestjs/common';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  InternalError,
  InvalidRequestError,
  ModelLoadError,
  RegistryError,
  toDaemonError,
} from '../../../../src/common/errors';
import { ollamaErrorLine, toOllamaError } from '../../../../src/common/http/ollama-error.mapper';
import {
  describeSystemError,
  isSystemError,
  redactServerPaths,
  safeErrorMessage,
} from '../../../../src/common/http/safe-error-message';
import { toAnthropicError } from '../../../../src/api/anthropic/anthropic-error';
import { toOpenAIError } from '../../../../src/api/openai/openai-error';

/** Runs `op` and returns what it threw (a real Node system error). */
async function thrown(op: () => Promise<unknown>): Promise<Error> {
  try {
    await op();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the operation to fail');
}

describe('system errors never reach a client with their path (issue 11 item 4)', () => {
  let dir: string;
  const cases: Array<{ name: string; make: () => Promise<Error>; message: string }> = [];

  before(async () => {
    Logger.overrideLogger(false);
    dir = await mkdtemp(join(tmpdir(), 'llamad-secret-store-'));
    await mkdir(join(dir, 'blobs'));
    await writeFile(join(dir, 'blobs', 'file'), 'x');
    await writeFile(join(dir, 'locked'), 'x', { mode: 0o000 });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  cases.push(
    {
      name: 'ENOENT',
      make: () => thrown(() => readFile(join(dir, 'blobs', 'sha256-missing'))),
      message: 'internal error: open: no such file or directory',
    },
    {
      name: 'EISDIR',
      make: () => thrown(() => writeFile(join(dir, 'blobs'), 'x')),
      message: 'internal error: open: is a directory',
    },
    {
      name: 'EEXIST',
      make: () => thrown(() => mkdir(join(dir, 'blobs'))),
      message: 'internal error: mkdir: file exists',
    },
    {
      name: 'ENOTDIR',
      make: () => thrown(() => readFile(join(dir, 'blobs', 'file', 'inner'))),
      message: 'internal error: open: not a directory',
    },
  );
  for (const c of cases) {
    it(`${c.name} → 500 "${c.message}" in all three dialects, path only in the log`, async () => {
      const err = await c.make();
      assert.equal((err as NodeJS.ErrnoException).code, c.name);
      assert.ok(err.message.includes(dir), 'the raw error names the store path');
      assert.ok(isSystemError(err));
      assert.deepEqual(toOllamaError(err), { status: 500, message: c.message });
      assert.deepEqual(ollamaErrorLine(err), { error: c.message });
      const openai = toOpenAIError(err);
      assert.equal(openai.status, 500);
      assert.equal(openai.body.error.message, c.message);
      const anthropic = toAnthropicError(err);
      assert.equal(anthropic.status, 500);
      assert.equal(anthropic.body.error.message, c.message);
      for (const body of [toOllamaError(err), openai.body, anthropic.body]) {
        assert.doesNotMatch(JSON.stringify(body), /llamad-secret-store/);
      }
    });
  }

  it('EACCES (skipped as root, who may open anything) → 500 permission denied', async (t) => {
    if (process.getuid?.() === 0) return t.skip('running as root: a mode-000 file is readable');
    const err = await thrown(() => open(join(dir, 'locked'), 'r'));
    assert.deepEqual(toOllamaError(err), { status: 500, message: 'internal error: open: permission denied' });
  });

  it('ENOSPC and others without a real failure: Go errno wording, syscall kept', () => {
    const enospc = Object.assign(new Error(`ENOSPC: no space left on device, write '${dir}/blobs/x'`), {
      code: 'ENOSPC',
      errno: -28,
      syscall: 'write',
      path: `${dir}/blobs/x`,
    });
    assert.deepEqual(toOllamaError(enospc), { status: 500, message: 'internal error: write: no space left on device' });
    const eacces = Object.assign(new Error(`EACCES: permission denied, open '${dir}/locked'`), {
      code: 'EACCES',
      errno: -13,
      syscall: 'open',
      path: `${dir}/locked`,
    });
    assert.deepEqual(toOllamaError(eacces), { status: 500, message: 'internal error: open: permission denied' });
    const noSyscall = Object.assign(new Error('EWEIRD: odd'), { code: 'EWEIRD', errno: -999 });
    assert.equal(describeSystemError(noSyscall as never), 'eweird');
    // Fastify's and undici's coded errors are not system errors.
    assert.equal(isSystemError(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' })), false);
    assert.equal(isSystemError(Object.assign(new Error('x'), { code: 'UND_ERR_SOCKET' })), false);
  });

  it('an InternalError that only wraps a system error (toDaemonError) renders like the system error', async () => {
    const err = await thrown(() => readFile(join(dir, 'nope', 'sha256-1')));
    const wrapped = toDaemonError(err);
    assert.ok(wrapped instanceof InternalError);
    assert.deepEqual(toOllamaError(wrapped), {
      status: 500,
      message: 'internal error: open: no such file or directory',
    });
  });

  it('a domain error that embeds a system error message loses the path, keeps its wording', async () => {
    const err = await thrown(() => readFile(join(dir, 'blobs', 'sha256-gone')));
    const load = new ModelLoadError(`failed to load model: ${err.message}`, { cause: err });
    assert.deepEqual(toOllamaError(load), {
      status: 500,
      message: "failed to load model: ENOENT: no such file or directory, open '<path>'",
    });
    // A 4xx keeps the words but not the path the file system reported.
    const bad = new InvalidRequestError(`cannot use ${join(dir, 'blobs', 'x')}: not found`, 'from', {
      cause: Object.assign(new Error('ENOENT'), {
        code: 'ENOENT',
        errno: -2,
        syscall: 'open',
        path: join(dir, 'blobs', 'x'),
      }),
    });
    assert.deepEqual(toOllamaError(bad), { status: 400, message: 'cannot use <path>: not found' });
  });

  it('5xx messages in every dialect have POSIX and Windows absolute paths removed', () => {
    const err = new InternalError(
      'runner failed: /home/alice/.ollama/models/blobs/sha256-ab (see C:\\Users\\alice\\x.log, \\\\srv\\share\\m, file:///var/lib/x)',
    );
    const expected = 'runner failed: <path> (see <path>, <path>, <path>)';
    assert.equal(toOllamaError(err).message, expected);
    assert.equal(toOpenAIError(err).body.error.message, expected);
    assert.equal(toAnthropicError(err).body.error.message, expected);
    assert.equal(toOllamaError(new RegistryError("open '/srv/models/x/y': denied")).message, "open '<path>': denied");
    assert.equal(toOllamaError(new TypeError('cannot read /etc/x/y=1')).message, 'cannot read <path>');
  });

  it('paths with spaces: a quoted path ends at its quote, an unquoted one goes on while the next word has a slash', () => {
    assert.equal(redactServerPaths('open /srv/my models/x.gguf now'), 'open <path> now');
    assert.equal(redactServerPaths("open '/srv/my models/x.gguf': no such file"), "open '<path>': no such file");
    assert.equal(redactServerPaths('load "/tmp/a b/c d.gguf" failed'), 'load "<path>" failed');
    assert.doesNotMatch(redactServerPaths('failed: /srv/my models/x.gguf'), /models|x\.gguf/);
  });

  it('keeps what is not a server path: URLs, single segments, ratios, 4xx client text', () => {
    const kept = [
      'pull model manifest: Get "https://registry.ollama.ai/v2/library/x/manifests/latest": dial tcp 1.2.3.4:443',
      'input/output error',
      'expected 1/2 of the layers at /',
      'bad value /x',
    ];
    for (const text of kept) assert.equal(redactServerPaths(text), text);
    assert.equal(safeErrorMessage('path /a/b is invalid', 400), 'path /a/b is invalid');
    assert.equal(safeErrorMessage('path /a/b is invalid', 500), 'path <path> is invalid');
    assert.deepEqual(toOllamaError(new BadRequestException('FROM /a/b: bad')), {
      status: 400,
      message: 'FROM /a/b: bad',
    });
  });

  it('logs the original error (with the path) once when it rewrote the message', async () => {
    const lines: string[] = [];
    Logger.overrideLogger({
      log: () => undefined,
      warn: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
      error: (message: unknown) => void lines.push(String(message)),
    });
    try {
      const err = await thrown(() => readFile(join(dir, 'blobs', 'sha256-logged')));
      toOllamaError(err);
      toOpenAIError(err);
      assert.equal(lines.length, 1);
      assert.ok(lines[0].includes(join(dir, 'blobs', 'sha256-logged')), lines[0]);
      toOllamaError(new InternalError('plain'));
      assert.equal(lines.length, 1, 'an unchanged message is not logged here');
    } finally {
      Logger.overrideLogger(false);
    }
  });
});
