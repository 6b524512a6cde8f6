// A throwaway certificate authority for the adapter's tests, made with the openssl CLI in a temporary directory.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface TestPki {
  caPem: string;
  serverKey: string;
  serverCert: string;
}

function run(dir: string, args: string[]): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
}

/** A CA and a server certificate signed by it, by default for 127.0.0.1 and localhost. */
export function makeTestPki(subjectAltName = "IP:127.0.0.1,DNS:localhost"): TestPki {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "release-pki-"));
  try {
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    run(dir, ["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Release adapter test CA",
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    run(dir, ["req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    fs.writeFileSync(path.join(dir, "ext.cnf"),
      `subjectAltName=${subjectAltName}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    run(dir, ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
      "-days", "2", "-extfile", "ext.cnf"]);
    const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
    return { caPem: read("ca.pem"), serverKey: read("server.key"), serverCert: read("server.pem") };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
