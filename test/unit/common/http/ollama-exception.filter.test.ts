import { ArgumentsHost, BadRequestException, NotFoundException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ContextLengthExceededError,
  DigestMismatchError,
  ErrorCode,
  InsufficientMemoryError,
  InternalError,
  InvalidRequestError,
  ModelLoadError,
  ModelNotFoundError,
  RegistryError,
  RequestCancelledError,
  ServerBusyError,
  UnsupportedCapabilityError,
} from '../../../../src/common/errors';
import { ollamaErrorLine, ollamaStatus, toOllamaError } from '../../../../src/common/http/ollama-error.mapper';
import { OllamaExceptionFilter } from '../../../../src/common/http/ollama-exception.filter';

describe('toOllamaError', () => {
  const table: Array<[Error, number, string]> = [
    [new InvalidRequestError('missing request body'), 400, 'missing request body'],
    [new ModelNotFoundError('x'), 404, "model 'x' not found"],
    [new UnsupportedCapabilityError('"m" does not support chat', 'completion'), 400, '"m" does not support chat'],
    [new ContextLengthExceededError('too long'), 400, 'too long'],
    [new DigestMismatchError('sha256:a', 'sha256:b'), 400, 'digest mismatch, expected "sha256:a", got "sha256:b"'],
    [new ModelLoadError('bad file'), 500, 'bad file'],
    [new InsufficientMemoryError('oom'), 500, 'oom'],
    [new InternalError('boom'), 500, 'boom'],
    [new RegistryError('upstream'), 502, 'upstream'],
    [new ServerBusyError(), 503, 'server busy, please try again.  maximum pending requests exceeded'],
    [new RequestCancelledError(), 499, 'request canceled'],
    [new BadRequestException('nest bad'), 400, 'nest bad'],
    [Object.assign(new Error('Request body is too large'), { statusCode: 413 }), 413, 'Request body is too large'],
    [new TypeError('x is not a function'), 500, 'x is not a function'],
  ];
  for (const [err, status, message] of table) {
    it(`${err.constructor.name} → ${status}`, () => assert.deepEqual(toOllamaError(err), { status, message }));
  }

  it('gives every error code a status', () => {
    for (const code of Object.values(ErrorCode)) assert.ok(ollamaStatus(code) >= 400);
  });

  it('builds the in-band NDJSON error line', () => {
    assert.deepEqual(ollamaErrorLine(new InternalError('mid-stream')), { error: 'mid-stream' });
  });

  it('never leaks a stack trace', () => {
    const err = new Error('plain');
    assert.doesNotMatch(JSON.stringify(toOllamaError(err)), /at .*\.js/);
  });
});

/** A minimal Fastify reply double recording what the filter sends. */
function fakeHost(method = 'POST', url = '/api/show', headersSent = false) {
  const sent: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
  const reply = {
    sent: false,
    raw: { headersSent, writableEnded: false, end: () => undefined },
    status(code: number) {
      sent.status = code;
      return reply;
    },
    header(name: string, value: string) {
      sent.headers[name] = value;
      return reply;
    },
    send(body: unknown) {
      sent.body = body;
      return reply;
    },
  };
  const request = { method, url };
  const host = {
    switchToHttp: () => ({ getResponse: () => reply, getRequest: () => request }),
  } as unknown as ArgumentsHost;
  return { host, sent };
}

function adapterHost(routes: Array<{ method: string; url: string }>): HttpAdapterHost {
  const fastify = {
    hasRoute: (r: { method: string; url: string }) => routes.some((x) => x.method === r.method && x.url === r.url),
  };
  return { httpAdapter: { getInstance: () => fastify } } as unknown as HttpAdapterHost;
}

describe('OllamaExceptionFilter', () => {
  it('renders domain errors as {"error": …} with their status', () => {
    const filter = new OllamaExceptionFilter(adapterHost([]));
    const { host, sent } = fakeHost();
    filter.catch(new ModelNotFoundError('nope'), host);
    assert.equal(sent.status, 404);
    assert.deepEqual(sent.body, { error: "model 'nope' not found" });
    assert.equal(sent.headers['content-type'], 'application/json; charset=utf-8');
  });

  it("answers an unknown route with gin's plain-text 404", () => {
    const filter = new OllamaExceptionFilter(adapterHost([]));
    const { host, sent } = fakeHost('GET', '/api/nope');
    filter.catch(new NotFoundException('Cannot GET /api/nope'), host);
    assert.equal(sent.status, 404);
    assert.equal(sent.body, '404 page not found');
  });

  it('answers a known route with the wrong method with 405', () => {
    const filter = new OllamaExceptionFilter(adapterHost([{ method: 'POST', url: '/api/show' }]));
    const { host, sent } = fakeHost('GET', '/api/show?x=1');
    filter.catch(new NotFoundException('Cannot GET /api/show?x=1'), host);
    assert.equal(sent.status, 405);
    assert.equal(sent.body, '405 method not allowed');
  });

  it('does not write a second response once streaming began', () => {
    const filter = new OllamaExceptionFilter(adapterHost([]));
    const { host, sent } = fakeHost('POST', '/api/generate', true);
    filter.catch(new InternalError('late'), host);
    assert.equal(sent.status, undefined);
    assert.equal(sent.body, undefined);
  });
});
