import { execFile } from "node:child_process";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";

/**
 * Calls the service makes no client for: raw gRPC exchanges over grpc-js
 * and Python's grpcio.
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
