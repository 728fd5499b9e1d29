import { connect, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy between the server and its database that the test can take down and bring back, as a database restart
 * looks from the server: open connections reset, new ones refused, then accepted again on the same port.
 */
export interface TcpProxy {
  port: number;
  /** Resets every open connection and refuses new ones. */
  down(): Promise<void>;
  /** Accepts connections again, on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const listening = createServer((client) => {
        const upstream = connect(target);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => undefined);
          socket.on('close', () => {
            sockets.delete(socket);
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      listening.once('error', reject);
      listening.listen(port, '127.0.0.1', () => {
        server = listening;
        resolve((listening.address() as { port: number }).port);
      });
    });
  const stop = async () => {
    const closing = server;
    server = undefined;
    const closed = closing ? new Promise<void>((resolve) => closing.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
    await closed;
  };
  const port = await listen(0);
  return {
    port,
    down: stop,
    up: async () => {
      await listen(port);
    },
    close: stop,
  };
}
