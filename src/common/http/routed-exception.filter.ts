import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/** One API dialect's error renderer and the URL paths it owns. */
export interface DialectErrorRoute {
  /** Matches the request URL (path and query) of the dialect's routes, e.g. `/^\/v1(?:[/?]|$)/`. */
  path: RegExp;
  filter: ExceptionFilter;
}

/**
 * The global exception filter: renders an error that no controller-bound filter caught — one raised before routing
 * reached a controller (the body parser's 400 for malformed or too deeply nested JSON, a 413) — in the dialect that
 * owns the request's URL, so an OpenAI or Anthropic client gets its own error shape there too. The first matching
 * route wins; anything else goes to `fallback` (the native Ollama dialect). Errors inside a controller are rendered
 * by that controller's own filter and never reach this one.
 */
@Catch()
export class RoutedExceptionFilter implements ExceptionFilter {
  constructor(
    private readonly routes: readonly DialectErrorRoute[],
    private readonly fallback: ExceptionFilter,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const url = host.switchToHttp().getRequest<FastifyRequest>().url;
    const route = this.routes.find((candidate) => candidate.path.test(url));
    (route?.filter ?? this.fallback).catch(exception, host);
  }
}
