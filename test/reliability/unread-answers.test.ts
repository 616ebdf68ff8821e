import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { edgeConfig } from "../../src/config.js";
import { Admission } from "../../src/ops/admission.js";
import { insertLargestQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { reportFigures } from "../support/reliability.js";
import { RACE_ADMISSION, startTestService, type TestService } from "../support/service.js";

// An HTTP/1.1 client that pipelines requests for large answers and never
// reads them: the service computes what the connection can take, holds no
// more than that unsent, and ends the connection once its bytes stop moving.

const WRITE_STALL_MS = 1000;
const PIPELINED = 60;
const admission = new Admission(RACE_ADMISSION);
let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService({
    admission,
    edge: { ...edgeConfig({}), writeStallMs: WRITE_STALL_MS },
  });
  quiz = await insertLargestQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

describe("HTTP/1.1 answers a client never reads", () => {
  it(`${PIPELINED} pipelined requests for a 282 KB answer, never read: the rest wait unread, and the connection ends once its bytes stop for the write stall`, async () => {
    const size = (await (await svc.rest("probe", "GET", `/quizzes/${quiz.quizId}`)).text()).length;
    const token = await svc.token("pipeliner");
    const request = `GET /quizzes/${quiz.quizId} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`;
    const admitted = admission.admitted;
    const socket = connect(Number(new URL(svc.baseUrl).port), "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.pause();
    socket.write(request.repeat(PIPELINED));

    // Long enough for every answer to have been computed, were nothing held back.
    await sleep(WRITE_STALL_MS * 3);
    const served = admission.admitted - admitted;
    // Now read what the service let through: it must end before all the answers.
    let received = 0;
    const ended = new Promise<string>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        received += chunk.length;
      });
      socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
      socket.on("close", () => resolve("closed"));
    });
    socket.resume();
    const how = await Promise.race([ended, sleep(5000).then(() => "still open")]);
    socket.destroy();

    reportFigures("unread pipelined answers", { answerBytes: size, served, received, how });
    expect(how).not.toBe("still open");
    expect(served).toBeLessThan(PIPELINED / 2);
    expect(received).toBeLessThan(size * PIPELINED);
  });

  it("10 pipelined requests whose answers all fit in the kernel's buffers, never read: the connection ends once idle for the write stall, not at the keep-alive limit", async () => {
    const token = await svc.token("small-pipeliner");
    const request = `GET /quizzes/${quiz.quizId} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`;
    const socket = connect(Number(new URL(svc.baseUrl).port), "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.pause();
    socket.write(request.repeat(10));
    const t0 = performance.now();
    // Reading only after the write stall and two sweeps: the service has ended it by then.
    await sleep(WRITE_STALL_MS + 2500);
    const ended = new Promise<string>((resolve) => {
      socket.on("data", () => {});
      socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
      socket.on("close", () => resolve("closed"));
    });
    socket.resume();
    const how = await Promise.race([ended, sleep(3000).then(() => "still open")]);
    socket.destroy();
    reportFigures("unread pipelined answers in the kernel", {
      how,
      afterMs: Math.round(performance.now() - t0),
    });
    expect(how).not.toBe("still open");
  });
});
