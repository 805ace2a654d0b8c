// A loopback TCP proxy in front of a real server: counts connections (to prove something never connected) and can
// cut every connection after N bytes from the server (to break a stream mid-way, as a dying network would).
import * as net from "net";

export interface TcpProxy {
  /** 127.0.0.1:PORT */
  address: string;
  port: number;
  connections(): number;
  /** Bytes forwarded from the server to clients, all connections together. */
  bytesFromServer(): number;
  /** Cut the first connection whose server→client byte count passes `bytes`; undefined to stop cutting. */
  cutAfter(bytes: number | undefined): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let connections = 0;
  let fromServer = 0;
  let cutAfterBytes: number | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    connections++;
    let forwarded = 0;
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    const closeBoth = (): void => { client.destroy(); upstream.destroy(); };
    client.on("close", () => { sockets.delete(client); upstream.destroy(); });
    upstream.on("close", () => { sockets.delete(upstream); client.destroy(); });
    client.on("error", closeBoth);
    upstream.on("error", closeBoth);
    client.pipe(upstream);
    upstream.on("data", (data: Buffer) => {
      if (cutAfterBytes !== undefined && forwarded + data.length > cutAfterBytes) {
        // Forward up to the limit, then drop the connection: the client sees a stream that stops mid-message.
        const allowed = Math.max(0, cutAfterBytes - forwarded);
        client.write(data.subarray(0, allowed), () => closeBoth());
        forwarded += allowed;
        fromServer += allowed;
        cutAfterBytes = undefined;
        upstream.pause();
        return;
      }
      forwarded += data.length;
      fromServer += data.length;
      if (!client.write(data)) {
        upstream.pause();
        client.once("drain", () => upstream.resume());
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    connections: () => connections,
    bytesFromServer: () => fromServer,
    cutAfter: (bytes) => { cutAfterBytes = bytes; },
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
