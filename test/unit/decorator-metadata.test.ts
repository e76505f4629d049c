import 'reflect-metadata';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GenerateRequestDto } from '../../src/api/ollama/dto/generate-request.dto';
import { SchedulerService } from '../../src/scheduler/scheduler.service';
import { ModelsService } from '../../src/models/models.service';

// Guard against a test runner or build that drops emitDecoratorMetadata (esbuild, tsx, type stripping): Nest would
// then inject nothing by type and ValidationPipe would silently skip validation (ARCHITECTURE.md §9).
describe('decorator metadata', () => {
  it('is emitted for constructor parameters', () => {
    const types = Reflect.getMetadata('design:paramtypes', ModelsService) as unknown[] | undefined;
    assert.ok(Array.isArray(types) && types.length >= 1 && typeof types[0] === 'function');
    assert.ok(Reflect.getMetadata('design:paramtypes', SchedulerService));
  });

  it('is emitted for DTO property types', () => {
    assert.equal(Reflect.getMetadata('design:type', GenerateRequestDto.prototype, 'prompt'), String);
  });
});
