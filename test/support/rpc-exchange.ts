import { execFile } from "node:child_process";
import { connect as http2Connect } from "node:http2";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";

/**
 * Calls the service makes no client for: raw gRPC exchanges over grpc-js,
 * node:http2 and Python's grpcio, and Connect unary POSTs with fetch, each
 * reduced to what must match byte for byte (no date, no request id).
 */

const PYTHON = "/usr/bin/python3";

export interface RawResult {
  err: grpc.ServiceError | null;
  body?: Buffer;
  headers?: grpc.Metadata;
}

/** One unary call with grpc-js on raw bytes, its response headers kept. */
export function rawCall(
  client: grpc.Client,
  path: string,
  body: Buffer,
  md: Record<string, string>,
  options: grpc.CallOptions = {},
): Promise<RawResult> {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    const call = client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      metadata,
      options,
      (err, res) => resolve({ err, body: res, headers }),
    );
    call.on("metadata", (m) => {
      headers = m;
    });
  });
}

/** One call with Python's grpcio (test/support/grpc_call.py), configured by env. */
export async function pythonGrpc(args: Record<string, string>): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(PYTHON, ["test/support/grpc_call.py"], {
    env: { ...process.env, ...args },
  });
  return JSON.parse(stdout) as Record<string, string>;
}

/** Whether Python's grpcio is installed (the Python test is skipped if not). */
export const hasPythonGrpc = await promisify(execFile)(PYTHON, ["-c", "import grpc"]).then(
  () => true,
  () => false,
);

/** A gRPC exchange over node:http2, everything but the date and the request id. */
export async function h2Exchange(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
) {
  const session = http2Connect(baseUrl);
  try {
    return await new Promise<{ head: object; data: string; trailers: object }>(
      (resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": path, ...headers });
        const chunks: Buffer[] = [];
        let head = {};
        let trailers = {};
        const clean = (h: object) =>
          Object.fromEntries(
            Object.entries(h).filter(([k]) => !["date", "x-request-id"].includes(k)),
          );
        req.on("response", (h) => {
          head = clean(h);
        });
        req.on("trailers", (t) => {
          trailers = clean(t);
        });
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () =>
          resolve({ head, data: Buffer.concat(chunks).toString("hex"), trailers }),
        );
        req.on("error", reject);
        req.end(body);
      },
    );
  } finally {
    session.close();
  }
}

/** A message in gRPC's length-prefixed frame (uncompressed). */
export const envelope = (message: Buffer) => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

/** A Connect unary POST over HTTP/1.1: status, headers but the date and id, body. */
export async function connectExchange(
  url: string,
  headers: Record<string, string>,
  body: string | Buffer,
) {
  const res = await fetch(url, { method: "POST", headers, body });
  const head = Object.fromEntries(
    [...res.headers].filter(([k]) => !["date", "x-request-id", "keep-alive"].includes(k)),
  );
  return { status: res.status, head, body: Buffer.from(await res.arrayBuffer()).toString("hex") };
}
