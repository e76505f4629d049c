import { BeforeApplicationShutdown, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';
import { ServerBusyError } from '../../common/errors';
import { DaemonConfig } from '../../config';
import { SchedulerService } from '../../scheduler';
import { HttpObservation, MODEL_EVENTS, ModelEvents, SHUTTING_DOWN_MESSAGE } from '../../observability';

/** How long streams ended at the timeout get to write their last frame and close, ms. */
export const FINAL_FRAME_GRACE_MS = 5_000;

/** How often the drain looks at what is still in flight, ms. */
const POLL_MS = 50;

/** What a drain did. */
export interface DrainResult {
  /** HTTP requests in flight when it began. */
  inFlightAtStart: number;
  /** Whether the timeout (or a second signal) came before everything finished. */
  timedOut: boolean;
  /** Requests (streams, waits for a load) ended with `server is shutting down` at the timeout. */
  ended: number;
}

/**
 * Graceful shutdown (issue 13): {@link drain} first reports not ready (`GET /ready` answers 503 `shutting down` from
 * the start) while still accepting requests for LLAMAD_DRAIN_DELAY (default 0), so that a load balancer that checks
 * `/ready` takes the replica out without a failed request (issue 34, docs/deploy.md "Several replicas"); then it stops
 * accepting — the listening socket closes, idle keep-alive connections are dropped and requests that still arrive on
 * open ones get 503 `server is shutting down`; open `GET /api/events` streams end — and lets the requests in flight, streams included, finish for up to
 * LLAMAD_SHUTDOWN_TIMEOUT; then ends the rest through the scheduler (each stream writes its dialect's final error
 * frame) and waits briefly for them to close. The caller then closes the application, which unloads the models
 * (SchedulerService.onApplicationShutdown).
 *
 * main.ts drives it on SIGTERM/SIGINT (then exits 0); in a host application that calls `enableShutdownHooks()` it
 * runs from `beforeApplicationShutdown` when a signal is the cause. A plain `app.close()` (tests) does not drain.
 */
@Injectable()
export class GracefulShutdownService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  private draining?: Promise<DrainResult>;
  private stopWaiting?: () => void;

  constructor(
    private readonly config: DaemonConfig,
    private readonly scheduler: SchedulerService,
    private readonly observation: HttpObservation,
    private readonly adapterHost: HttpAdapterHost,
    @Optional() @Inject(MODEL_EVENTS) private readonly events?: ModelEvents,
  ) {}

  /**
   * Drains once (later calls return the same promise).
   * @param timeoutMs how long requests in flight may run once the listener closed, ms (default LLAMAD_SHUTDOWN_TIMEOUT).
   * @param delayMs how long requests are still accepted while readiness already reports down, ms (default
   *   LLAMAD_DRAIN_DELAY).
   */
  drain(
    timeoutMs: number = this.config.shutdownTimeoutMs,
    delayMs: number = this.config.drainDelayMs,
  ): Promise<DrainResult> {
    this.draining ??= this.run(timeoutMs, delayMs);
    return this.draining;
  }

  /** Whether a drain has begun (readiness then reports down: docs/library.md "Health and shutdown"). */
  isDraining(): boolean {
    return this.draining !== undefined;
  }

  /** Ends the delay and the grace period now (a second signal): what is still running is ended at once. */
  endNow(): void {
    this.stopWaiting?.();
  }

  /** Drains when Nest's own shutdown hooks run because of a signal (a host application's `enableShutdownHooks`). */
  async beforeApplicationShutdown(signal?: string): Promise<void> {
    if (signal) await this.drain();
  }

  private async run(timeoutMs: number, delayMs: number): Promise<DrainResult> {
    const stopped = new Promise<void>((resolve) => (this.stopWaiting = resolve));
    if (delayMs > 0) {
      // Readiness already answers 503 (isDraining); requests are still accepted until the balancer noticed.
      this.logger.log(`not ready; still accepting requests for ${delayMs} ms (LLAMAD_DRAIN_DELAY)`);
      await this.waitUntil(() => false, delayMs, stopped);
    }
    this.observation.draining = true;
    this.stopListening();
    this.events?.end(); // open GET /api/events streams end now: they never finish by themselves
    const busy = () => this.observation.inFlight + this.scheduler.inFlightCount();
    const inFlightAtStart = this.observation.inFlight;
    if (busy() > 0) {
      this.logger.log(
        `draining ${this.observation.inFlight} request(s) in flight for up to ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    const finished = await this.waitUntil(() => busy() === 0, timeoutMs, stopped);
    if (finished) return { inFlightAtStart, timedOut: false, ended: 0 };
    const ended = this.scheduler.abortAll(new ServerBusyError(SHUTTING_DOWN_MESSAGE));
    this.logger.warn(`shutdown timeout: ended ${ended} request(s) still running`);
    await this.waitUntil(() => this.observation.inFlight === 0, FINAL_FRAME_GRACE_MS);
    return { inFlightAtStart, timedOut: true, ended };
  }

  /** Closes the listening socket (no new connections) and the idle keep-alive connections. */
  private stopListening(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server?.listening) return;
    server.close();
    server.closeIdleConnections?.();
  }

  /** Polls `done` until it holds (true), `timeoutMs` passes or `stop` resolves (false). */
  private async waitUntil(done: () => boolean, timeoutMs: number, stop?: Promise<void>): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    let stopped = false;
    void stop?.then(() => (stopped = true));
    while (!done()) {
      if (stopped || performance.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(1, deadline - performance.now()))));
    }
    return true;
  }
}
