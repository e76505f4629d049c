import { Module } from '@nestjs/common';
import { StreamResponder } from './http/stream-responder';

/** Shared HTTP plumbing used by every dialect's controllers. */
@Module({ providers: [StreamResponder], exports: [StreamResponder] })
export class CommonModule {}
