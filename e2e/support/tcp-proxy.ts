import net from "node:net";

/**
 * A TCP forwarder in front of the test PostgreSQL cluster, for a fault a real server does not make on demand: `freeze()`
 * stops every connection open through it from passing bytes either way (a hung backend, or a network that dropped the
 * packets: the sockets stay open and nothing answers), while connections made afterwards go through as usual; `cutNext(n)`
 * closes the next connection made through it when its client writes for the n-th time (a server going away mid-startup).
 */
export type TcpProxy = { readonly port: number; freeze(): void; cutNext(clientWrite: number): void; close(): Promise<void> };
type Pipe = { readonly client: net.Socket; readonly server: net.Socket };

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const pipes = new Set<Pipe>();
  const frozen: Pipe[] = [];
  let cutAt: number | null = null;
  const listener = net.createServer((client) => {
    const server = net.connect(upstream.port, upstream.host);
    const pipe = { client, server };
    pipes.add(pipe);
    const cut = cutAt;
    cutAt = null;
    if (cut === null) client.pipe(server);
    else {
      let writes = 0;
      client.on("data", (data) => (++writes === cut ? end() : server.write(data)));
    }
    server.pipe(client);
    const end = () => {
      pipes.delete(pipe);
      client.destroy();
      server.destroy();
    };
    client.on("close", end).on("error", end);
    server.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  return {
    port: (listener.address() as net.AddressInfo).port,
    freeze() {
      for (const { client, server } of pipes) {
        client.unpipe(server);
        server.unpipe(client);
        // Nothing is read on either side any more: what is sent waits in the kernel's buffers, unanswered.
        client.pause();
        server.pause();
        // Neither side closing is passed on either: the backend keeps its session (and its locks) as over a lost network.
        for (const socket of [client, server]) socket.removeAllListeners("close").removeAllListeners("error").on("error", () => {});
        frozen.push({ client, server });
      }
      pipes.clear();
    },
    cutNext(clientWrite) {
      cutAt = clientWrite;
    },
    async close() {
      for (const { client, server } of [...pipes, ...frozen.splice(0)]) {
        client.destroy();
        server.destroy();
      }
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
