import { isIP } from "node:net";
import { isAbsolute } from "node:path";
import { ConfigError } from "./config-error.ts";

/**
 * Database URL rules (spec "Settings", DESIGN 3.4 and 3.6).
 *
 * Production accepts only `postgresql://` URLs with one explicit host, a database, a user and a non-empty password; TLS with
 * `sslmode=verify-full` unless the host is loopback or a Unix socket; the query may hold only host, hostaddr, sslmode and
 * sslrootcert (absolute). Outside production the embedded `sqlite:<path>` database is also accepted and the PostgreSQL rules are
 * relaxed to what the driver needs. Libpq-only parameters are validated here and never reach postgres.js: unknown URL parameters
 * would be sent to the server as startup parameters (RECIPES 5), so the driver gets explicit options only.
 */

export type SqliteTarget = { readonly backend: "sqlite"; readonly path: string };

export type PostgresTarget = {
  readonly backend: "postgresql";
  /** TCP host name or IP; for a Unix socket, the socket directory (libpq form). */
  readonly host: string;
  /** hostaddr: the IP actually dialled while `host` is used for certificate verification. */
  readonly hostaddr: string | null;
  readonly socket: boolean;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly password: string | null;
  readonly tls: { readonly mode: "verify-full"; readonly caFile: string | null } | null;
};

export type DatabaseTarget = SqliteTarget | PostgresTarget;

const VARIABLE = "SERVICE_DATABASE_URL";
const ALLOWED_PARAMETERS = new Set(["host", "hostaddr", "sslmode", "sslrootcert"]);
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "::1"]);

export function isLoopbackOrSocket(target: PostgresTarget): boolean {
  return target.socket || LOOPBACK_HOSTS.has(target.host);
}

export function parseDatabaseUrl(raw: string, production: boolean, variable = VARIABLE): DatabaseTarget {
  const fail = (rule: string): never => {
    throw new ConfigError(variable, rule);
  };
  const value = raw.trim();
  if (value === "") fail("must not be empty");

  if (value.startsWith("sqlite:")) {
    if (production) fail("the embedded sqlite database is for single-process development only; production needs postgresql://");
    const path = value.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (path === "") fail("sqlite: needs a file path, for example sqlite:./service.db");
    return { backend: "sqlite", path };
  }

  const scheme = value.slice(0, value.indexOf(":") + 1);
  if (production ? scheme !== "postgresql:" : scheme !== "postgresql:" && scheme !== "postgres:") {
    fail(production ? "production accepts only the postgresql:// scheme" : "scheme must be postgresql:// or sqlite:");
  }

  // Parse the authority by hand: WHATWG URL does not accept libpq's comma-separated host lists or percent-encoded socket paths.
  const rest = value.slice(scheme.length);
  if (!rest.startsWith("//")) fail("must be of the form postgresql://user:password@host:port/database");
  const afterSlashes = rest.slice(2);
  const pathStart = afterSlashes.search(/[/?#]/);
  const authority = pathStart === -1 ? afterSlashes : afterSlashes.slice(0, pathStart);
  const remainder = pathStart === -1 ? "" : afterSlashes.slice(pathStart);
  if (remainder.includes("#")) fail("must not contain a fragment");
  const queryStart = remainder.indexOf("?");
  const pathPart = queryStart === -1 ? remainder : remainder.slice(0, queryStart);
  const query = new URLSearchParams(queryStart === -1 ? "" : remainder.slice(queryStart + 1));

  const at = authority.lastIndexOf("@");
  const userInfo = at === -1 ? "" : authority.slice(0, at);
  const hostPort = at === -1 ? authority : authority.slice(at + 1);

  const decode = (part: string, what: string): string => {
    try {
      return decodeURIComponent(part);
    } catch {
      return fail(`${what} is not valid percent-encoding`);
    }
  };

  let user = "";
  let password: string | null = null;
  if (userInfo !== "") {
    const colon = userInfo.indexOf(":");
    user = decode(colon === -1 ? userInfo : userInfo.slice(0, colon), "user name");
    password = colon === -1 ? null : decode(userInfo.slice(colon + 1), "password");
  }

  if (hostPort.includes(",")) fail("comma-separated host lists (multiple routes) are not allowed; give exactly one host");
  for (const name of query.keys()) {
    if (query.getAll(name).length > 1) fail(`query parameter ${name} must not repeat`);
  }
  if (query.get("host")?.includes(",") || query.get("hostaddr")?.includes(",") || query.get("port")?.includes(",")) {
    fail("comma-separated host lists (multiple routes) are not allowed; give exactly one host");
  }

  let host = "";
  let portText = "";
  if (hostPort.startsWith("[")) {
    const close = hostPort.indexOf("]");
    if (close === -1) fail("IPv6 host is missing its closing bracket");
    host = hostPort.slice(1, close);
    const after = hostPort.slice(close + 1);
    if (after !== "" && !after.startsWith(":")) fail("unexpected characters after the IPv6 host");
    portText = after.slice(1);
    if (after === ":") fail("port must be an integer from 1 to 65535");
  } else {
    const colon = hostPort.lastIndexOf(":");
    host = decode(colon === -1 ? hostPort : hostPort.slice(0, colon), "host");
    if (colon !== -1) {
      portText = hostPort.slice(colon + 1);
      if (portText === "") fail("port must be an integer from 1 to 65535");
    }
  }

  const queryHost = query.get("host");
  if (queryHost !== null) {
    if (host !== "") fail("give the host once: either in the authority or as the host parameter, not both");
    host = queryHost;
  }
  if (production) {
    for (const name of query.keys()) {
      if (!ALLOWED_PARAMETERS.has(name)) {
        fail(`query parameter ${name} is not allowed; only host, hostaddr, sslmode and sslrootcert are accepted`);
      }
    }
  } else {
    for (const name of query.keys()) {
      if (!ALLOWED_PARAMETERS.has(name) && name !== "port" && name !== "user" && name !== "password" && name !== "dbname") {
        fail(`query parameter ${name} is not supported; only host, hostaddr, sslmode and sslrootcert are accepted`);
      }
    }
    if (query.get("user") !== null) user ||= query.get("user") ?? "";
    if (query.get("password") !== null) password ??= query.get("password");
    if (query.get("port") !== null) portText ||= query.get("port") ?? "";
  }
  if (host === "") fail("needs one explicit host; hostless URLs (libpq defaults) are not allowed");

  const socket = host.startsWith("/");
  if (!socket && /[\s/]/.test(host)) fail("host is not a valid host name or address");

  let port = 5432;
  if (portText !== "") {
    if (!/^\d{1,5}$/.test(portText)) fail("port must be an integer from 1 to 65535");
    port = Number(portText);
    if (port < 1 || port > 65535) fail("port must be an integer from 1 to 65535");
  }

  let database = decode(pathPart.replace(/^\//, ""), "database name");
  if (!production && database === "" && query.get("dbname")) database = query.get("dbname") ?? "";
  if (database === "" || database.includes("/")) fail("needs exactly one database name in the path");
  if (user === "") fail("needs an explicit user name");
  if (production && (password === null || password === "")) fail("needs a non-empty password");

  const sslmode = query.get("sslmode");
  const hostaddr = query.get("hostaddr");
  const sslrootcert = query.get("sslrootcert");
  const loopback = socket || LOOPBACK_HOSTS.has(host);

  if (sslmode === "require" || sslmode === "verify-ca") {
    fail(`sslmode=${sslmode} does not verify the server's host name; use sslmode=verify-full`);
  }
  if (sslmode !== null && !["disable", "allow", "prefer", "verify-full"].includes(sslmode)) {
    fail("sslmode must be verify-full (or disable for a loopback host or Unix socket)");
  }
  if ((sslmode === "allow" || sslmode === "prefer") && production) {
    fail(`sslmode=${sslmode} may silently connect without TLS; use sslmode=verify-full`);
  }
  if (production && !loopback && sslmode !== "verify-full") {
    fail("a remote host needs sslmode=verify-full (only localhost, 127.0.0.1, ::1 or a Unix socket may skip TLS)");
  }
  if (hostaddr !== null) {
    if (isIP(hostaddr) === 0) fail("hostaddr must be a numeric IP address");
    if (socket) fail("hostaddr cannot be combined with a Unix-socket host");
    if (sslmode !== "verify-full") fail("hostaddr needs an explicit host and sslmode=verify-full");
  }
  if (sslrootcert !== null) {
    if (sslrootcert === "" || !isAbsolute(sslrootcert)) fail("sslrootcert must be a non-empty absolute path");
    if (sslmode !== "verify-full") fail("sslrootcert is only used with sslmode=verify-full");
  }
  if (socket && sslmode === "verify-full") fail("a Unix-socket connection does not use TLS; drop sslmode=verify-full");

  return {
    backend: "postgresql",
    host,
    hostaddr,
    socket,
    port,
    database,
    user,
    password: password === "" ? null : password,
    tls: sslmode === "verify-full" ? { mode: "verify-full", caFile: sslrootcert } : null,
  };
}
