import { applyDecorators, ExceptionFilter, Type, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { AuthorizationGuard } from './authorization.guard';
import { markRoutes } from './route-marks';
import { OllamaExceptionFilter, OllamaValidationPipe } from '../common/http';

/**
 * The class decorator of every controller of the module: binds the dialect's exception filter, the validation pipe
 * and the authorization guard to the controller itself, never to the application, so that a host application that
 * imports LlamadModule keeps its own error format, validation and guards on its own routes (and these routes keep
 * theirs whatever the host installs globally, except the host's global pipes and guards, which Nest runs first).
 * It also marks every route of the controller in its Fastify route config (`llamadRoute`, `llamadFilter`), so the
 * `onRequest` hooks (authorization, the library's Origin/Host gate) judge the module's routes only and render their
 * errors in the route's dialect before Nest runs.
 * @param filter the dialect's filter (default: Ollama's `{"error": "..."}`); OpenAI and Anthropic pass theirs.
 */
export function LlamadRoutes(filter: Type<ExceptionFilter> = OllamaExceptionFilter): ClassDecorator {
  return applyDecorators(
    UseFilters(filter),
    UsePipes(OllamaValidationPipe),
    UseGuards(AuthorizationGuard),
    (target: object) => markRoutes({ llamadRoute: true, llamadFilter: filter }, target),
  );
}
