import { createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { traceContextInterceptor } from "../../examples/web/src/trace-context.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";

/**
 * The practice page's Connect-Web interceptor (examples/web/src/trace-context.ts):
 * every call carries a valid, sampled `traceparent`; the calls of one
 * interaction share a trace id, the next interaction starts another.
 */
describe("the practice page's traceparent", () => {
  it("one trace per interaction, one span id per call", async () => {
    const seen: string[] = [];
    const page = new EventTarget();
    const transport = createRouterTransport(
      (router) =>
        router.service(QuizService, {
          getQuiz: (_req, ctx) => {
            seen.push(ctx.requestHeader.get("traceparent") ?? "");
            return {};
          },
        }),
      { transport: { interceptors: [traceContextInterceptor(page)] } },
    );
    const quizzes = createClient(QuizService, transport);
    page.dispatchEvent(new Event("click"));
    await quizzes.getQuiz({ quizId: "1" });
    await quizzes.getQuiz({ quizId: "1" });
    page.dispatchEvent(new Event("click"));
    await quizzes.getQuiz({ quizId: "1" });

    for (const header of seen) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [first, second, third] = seen.map((h) => h.split("-"));
    expect(first?.[1]).toBe(second?.[1]);
    expect(first?.[2]).not.toBe(second?.[2]);
    expect(third?.[1]).not.toBe(first?.[1]);
  });
});
