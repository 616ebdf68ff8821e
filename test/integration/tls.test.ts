import { readFileSync } from "node:fs";
import { connect as http2Connect } from "node:http2";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { AddressInfo } from "node:net";
import type { ConnectionOptions, TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { systemClock } from "../../src/domain/clock.js";
import { type OnePortServer, servePort } from "../../src/edge/one-port.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

/** A self-signed certificate for localhost and 127.0.0.1 (test only, valid to 2036). */
const TLS = { certFile: "test/fixtures/tls/cert.pem", keyFile: "test/fixtures/tls/key.pem" };
const ca = readFileSync(TLS.certFile);

let database: TestDatabase;
let port: OnePortServer;
let address: string;
let portNumber: number;
let quiz: QuizFixture;
const auth = async () => `Bearer ${await signToken(TEST_SECRET, "tls-user")}`;

beforeAll(async () => {
  database = await createTestDatabase();
  quiz = await insertQuiz(database.db);
  const app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    clock: systemClock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, systemClock),
    logger: pino({ level: "silent" }),
  });
  port = servePort(app, { tls: TLS });
  await port.listen(0, "127.0.0.1");
  portNumber = (port.server.address() as AddressInfo).port;
  address = `127.0.0.1:${portNumber}`;
});
afterAll(async () => {
  await port?.close(1000);
  await database?.drop();
});

describe("with TLS_CERT_FILE and TLS_KEY_FILE, the one port speaks TLS", () => {
  it("serves REST over HTTP/1.1 (ALPN http/1.1)", async () => {
    const authorization = await auth();
    const { status, alpn } = await new Promise<{ status: number; alpn: string | false | null }>(
      (resolve, reject) => {
        const options: RequestOptions & Pick<ConnectionOptions, "ALPNProtocols"> = {
          host: "127.0.0.1",
          port: portNumber,
          path: `/quizzes/${quiz.quizId}/sessions`,
          method: "POST",
          ca,
          headers: { authorization },
          ALPNProtocols: ["http/1.1"],
        };
        const req = httpsRequest(options, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, alpn: (res.socket as TLSSocket).alpnProtocol });
        });
        req.on("error", reject);
        req.end();
      },
    );
    expect(status).toBe(201);
    expect(alpn).toBe("http/1.1");
  });

  it("serves REST over HTTP/2 (ALPN h2)", async () => {
    const authorization = await auth();
    const session = http2Connect(`https://${address}`, { ca });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({
          ":path": `/api/quizzes/${quiz.quizId}/sessions`,
          authorization,
        });
        req.on("response", (h) => resolve(Number(h[":status"])));
        req.on("error", reject);
        req.resume();
        req.end();
      });
      expect(status).toBe(200);
      expect(session.alpnProtocol).toBe("h2");
    } finally {
      session.close();
    }
  });

  it("serves gRPC to grpc-js with TLS credentials", async () => {
    // The certificate's name, as a client of a real host would send it: an IP
    // address as TLS ServerName is not allowed (RFC 6066), and Node warns of it.
    const client = createGrpcClient(
      PracticeSessionService,
      address,
      grpc.credentials.createSsl(ca),
      {
        "grpc.ssl_target_name_override": "localhost",
      },
    );
    try {
      const page = await client.listSessions(
        { quizId: quiz.quizId },
        { authorization: await auth() },
      );
      expect(page.sessions).toHaveLength(1);
    } finally {
      client.close();
    }
  });

  it("refuses a client that does not trust the certificate", async () => {
    const failed = await new Promise<boolean>((resolve) => {
      const req = httpsRequest({ host: "127.0.0.1", port: portNumber, path: "/healthz" }, () =>
        resolve(false),
      );
      req.on("error", () => resolve(true));
      req.end();
    });
    expect(failed).toBe(true);
  });
});
