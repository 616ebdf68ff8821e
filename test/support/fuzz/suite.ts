import { codeToString } from "@connectrpc/connect/protocol-connect";
import { fc, it } from "@fast-check/vitest";
import { describe, expect } from "vitest";
import { inputArbitraries } from "./arbitraries.js";
import { checkConnect, checkRest, expectNoLeak } from "./checks.js";
import { expectedConnectList, expectedConnectStart, expectedGrpc } from "./oracle.js";
import { requestArbitraries } from "./requests.js";
import { connectBody, sendConnect, sendConnectStart, sendGrpc, sendRest } from "./send.js";
import { FUZZER, fuzzWorld, VICTIM } from "./world.js";

/**
 * Property-based bad input: generated REST and Connect (and gRPC) requests
 * with odd quiz ids, cursors, limits, statuses, bodies and headers. Each
 * request carries its own expectation where the input decides the answer
 * (oracle.ts, written from the contract, not from the code); every answer is
 * checked for: no 5xx, the error shape of its transport, the HTTP status that
 * matches its code, and no session of another user (checks.ts).
 *
 * `scale` multiplies the run counts: 1 in `npm test`, 13 in `test:chaos`.
 */
export function badInputSuite(scale: number) {
  const world = fuzzWorld(scale);
  const requests = requestArbitraries(inputArbitraries(world));
  const RUNS = 45 * scale;
  const BATCH = 8;
  const batch = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 1, maxLength: BATCH });

  describe(`bad input (x${scale})`, () => {
    it.prop([batch(requests.rest)], { numRuns: RUNS })(
      `REST: ${RUNS} batches of up to ${BATCH} concurrent generated requests; never 5xx, always problem+json, never another user's data`,
      async (batch) => {
        const answers = await Promise.all(batch.map((r) => sendRest(world, r)));
        batch.forEach((r, i) => {
          checkRest(world, r, answers[i] ?? expect.unreachable());
        });
      },
    );

    it.prop([batch(requests.connectList)], { numRuns: RUNS })(
      `Connect JSON ListSessions: ${RUNS} batches; each error has the code the input calls for`,
      async (batch) => {
        const answers = await Promise.all(
          batch.map((r) =>
            sendConnect(world, "ListSessions", JSON.stringify(connectBody(r)), r.headers, r.auth),
          ),
        );
        batch.forEach((r, i) => {
          const quizId = r.quizAs === "string" ? r.quiz.raw : undefined;
          checkConnect(world, answers[i] ?? expect.unreachable(), expectedConnectList(r), quizId);
        });
      },
    );

    it.prop([batch(requests.connectStart)], { numRuns: RUNS })(
      `Connect StartSession: ${RUNS} batches of odd quiz ids and bodies (JSON, garbage, binary)`,
      async (batch) => {
        const answers = await Promise.all(batch.map((r) => sendConnectStart(world, r)));
        batch.forEach((r, i) => {
          const answer = answers[i] ?? expect.unreachable();
          if (r.shape === "binary" && answer.res.status === 200) {
            world.seen.push({ transport: "connect", outcome: "ok" });
            return;
          }
          checkConnect(world, answer, expectedConnectStart(r));
        });
      },
    );

    const GRPC_RUNS = Math.ceil(RUNS / 2);
    it.prop([batch(requests.grpc)], { numRuns: GRPC_RUNS })(
      `gRPC (grpc-js): ${GRPC_RUNS} batches of typed requests with any field values`,
      async (batch) => {
        const answers = await Promise.all(batch.map((r) => sendGrpc(world, r)));
        batch.forEach((r, i) => {
          const { code, ids } = answers[i] ?? expect.unreachable();
          const name = code === 0 ? "ok" : codeToString(code);
          world.seen.push({ transport: "grpc", outcome: name });
          expectNoLeak(world, ids);
          expect(name, JSON.stringify(r)).toBe(expectedGrpc(r));
        });
      },
    );

    it("answers URLs Fastify refuses before routing with problem+json, never echoing the URL", async () => {
      const missing = await world.svc.rest(FUZZER, "GET", "/quizzes/999999999/sessions");
      const missingBody = (await missing.json()) as Record<string, unknown>;
      // A quiz id over its 64 characters, short enough for the router to read or not.
      for (const path of [
        `/quizzes/${"a".repeat(1000)}/sessions`,
        `/api/quizzes/${"9".repeat(2000)}/sessions`,
        `/api/quizzes/${"9".repeat(300)}/sessions`,
      ]) {
        const res = await world.svc.rest(FUZZER, "GET", path);
        expect(res.status).toBe(400);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        const message = "quiz_id must be at most 64 characters";
        expect(await res.json()).toEqual({
          ...missingBody,
          title: "Bad Request",
          status: 400,
          code: "invalid_argument",
          detail: message,
          errors: [{ field: "quiz_id", message }],
        });
      }
      for (const path of [
        "/quizzes/%/sessions",
        "/quizzes/%E0%A4%A/sessions",
        "/api/quizzes/%zz/sessions",
      ]) {
        const res = await world.svc.rest(FUZZER, "GET", path);
        expect(res.status).toBe(400);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(await res.json()).toEqual({
          type: "about:blank",
          title: "Bad Request",
          status: 400,
          detail: "the request URL is not valid",
          code: "invalid_argument",
        });
      }
      const xml = await world.svc.rest(
        FUZZER,
        "POST",
        "/practice.v1.PracticeSessionService/ListSessions",
        {
          headers: { "content-type": "application/xml" },
          body: "<x/>",
        },
      );
      expect(xml.status).toBe(415);
      expect(xml.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    });

    it("still serves normally afterwards, and the fuzzer never created more than one session in progress", async () => {
      const res = await world.svc.rest(
        VICTIM,
        "GET",
        `/quizzes/${world.live.quizId}/sessions?limit=100`,
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as { sessions: { id: string }[] };
      expect(page.sessions.map((s) => s.id).sort()).toEqual([...world.victimIds].sort());
      const fuzzerSessions = await world.svc.db
        .selectFrom("practice_sessions")
        .select("id")
        .where("user_id", "=", FUZZER)
        .execute();
      expect(fuzzerSessions).toHaveLength(1);
    });
  });
}
