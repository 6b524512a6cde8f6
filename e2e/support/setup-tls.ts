// A TLS-terminating proxy on loopback for the setup spec, as an ingress would be: HTTPS in front, plain HTTP to the service
// behind it. Its certificate comes from a throwaway CA made with openssl in a temp directory. Node APIs only (Playwright runs
// specs under Node).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export interface TestCertificates { caFile: string; certFile: string; keyFile: string }

/** A CA and a server certificate for 127.0.0.1 and localhost, valid for a day. */
export function makeCertificates(dir: string): TestCertificates {
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=Setup spec test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n");
  run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "server.ext");
  return { caFile: join(dir, "ca.pem"), certFile: join(dir, "server.pem"), keyFile: join(dir, "server.key") };
}

export interface TlsProxy {
  readonly url: string;
  readonly port: number;
  /** The plain-HTTP origin requests are forwarded to (changed when the service restarts). */
  target: string | null;
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1 (port chosen by the system). Nothing is logged: the callback's query must stay unlogged. */
export async function startTlsProxy(certs: TestCertificates): Promise<TlsProxy> {
  const proxy: { target: string | null } = { target: null };
  const server: Server = createServer({ key: readFileSync(certs.keyFile), cert: readFileSync(certs.certFile) }, (req, res) => {
    if (!proxy.target) {
      res.writeHead(502, { "content-type": "text/plain" }).end("no upstream");
      return;
    }
    const upstream = new URL(proxy.target);
    const forward = httpRequest({
      hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url,
      headers: { ...req.headers, "x-forwarded-proto": "https", "x-forwarded-for": req.socket.remoteAddress ?? "" },
    }, (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
    });
    forward.on("error", () => { if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }); res.end("upstream unavailable"); });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(proxy, {
    url: `https://127.0.0.1:${port}`,
    port,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  });
}
