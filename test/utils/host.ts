import { Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';

/**
 * Starts a host application (a NestJS module of the test's own, usually importing LlamadModule) on Fastify, quiet,
 * listening on a free loopback port.
 * @param adapter the host's Fastify adapter (its own options, e.g. genReqId); default a plain one.
 * @returns the application and its base URL (`http://127.0.0.1:<port>`).
 */
export async function listenHost(
  module: Type<unknown>,
  adapter: FastifyAdapter = new FastifyAdapter(),
): Promise<{ app: NestFastifyApplication; base: string }> {
  const app = await NestFactory.create<NestFastifyApplication>(module, adapter, { logger: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address();
  return { app, base: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** Every `$ref` anywhere in an OpenAPI document (or part of one). */
export function openApiRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => openApiRefs(n, out));
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else openApiRefs(value, out);
    }
  }
  return out;
}
