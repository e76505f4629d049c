import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A server of a test listening on 127.0.0.1. */
export interface LoopbackServer {
  port: number;
  /** Closes the server, dropping its open connections first. */
  close: () => Promise<void>;
}

/** Starts `server` (node:http or node:https) on 127.0.0.1:0; returns its port and a closer that drops open connections. */
export async function listenLoopback(server: Server): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What `fn` rejected with; throws when it resolved. */
export async function rejection(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}
