/**
 * The service's Connect routes alone, on an h2c-only Fastify, with
 * `compressMinBytes` from COMPRESS_MIN_BYTES: for measuring whether gzip of
 * gRPC list pages pays off (src/server.ts fixes it at 64 KiB). Everything
 * else is the service's own code.
 *
 *   PORT=8091 COMPRESS_MIN_BYTES=1024 DATABASE_URL=... JWT_SECRET=... tsx bench/servers/connect-only.ts
 */
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { fastify } from "fastify";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { openDatabase } from "../../src/db/connect.js";
import { systemClock } from "../../src/domain/clock.js";
import { authInterceptor } from "../../src/rpc/auth-interceptor.js";
import { practiceSessionService } from "../../src/rpc/practice-session-service.js";

const database = openDatabase({
  url: process.env.DATABASE_URL ?? "",
  poolSize: Number(process.env.DB_POOL_SIZE ?? 10),
  connectTimeoutMs: 2000,
});
const app = fastify({ http2: true, logger: false });
const sessions = new PracticeSessions(database.db, systemClock);
await app.register(fastifyConnectPlugin, {
  routes: (router) => router.service(PracticeSessionService, practiceSessionService(sessions)),
  interceptors: [
    authInterceptor(createAuthenticator({ secret: process.env.JWT_SECRET ?? "" }, systemClock)),
  ],
  compressMinBytes: Number(process.env.COMPRESS_MIN_BYTES ?? 65536),
});
await app.listen({ port: Number(process.env.PORT ?? 8091), host: "127.0.0.1" });
process.on("SIGTERM", () => {
  void app.close().then(() => database.close().then(() => process.exit(0)));
});
