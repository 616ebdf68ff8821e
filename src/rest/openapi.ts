import fastifySwagger from "@fastify/swagger";
import type { App } from "../app-server.js";

/**
 * /openapi.json from the routes' schemas; register before any route. "/api" is
 * a second server, not copied paths, so generators make one method per operation.
 */
export async function openApiGenerator(app: App) {
  await app.register(fastifySwagger, {
    hideUntagged: true,
    openapi: {
      openapi: "3.1.1",
      info: {
        title: "Practice sessions (REST gateway)",
        version: "1.0.0",
        description:
          "The REST/JSON face of `practice.v1.PracticeSessionService` and `practice.v1.QuizService`. " +
          "The same operations are served over gRPC, Connect and gRPC-Web on the same port. JSON " +
          "names are snake_case; times are RFC 3339 UTC with milliseconds; nullable fields are " +
          "present as null. Writes are safe to retry: a start resumes, the same answer again " +
          "and a repeated completion are 200 and write nothing, and a different answer is 409 " +
          "with the stored one. Every error is application/problem+json, including those " +
          "answered before any operation: 431 for a request line and headers over 16 KiB, 400 " +
          "for a request that is not HTTP or text that is not well-formed Unicode.",
      },
      servers: [
        { url: "/", description: "Paths at the root." },
        {
          url: "/api",
          description: "The same paths under /api (a 201's Location is then under /api too).",
        },
      ],
      security: [{ bearerAuth: [] }],
      tags: [
        { name: "sessions", description: "Practice sessions on a quiz." },
        { name: "quizzes", description: "Quiz content." },
        {
          name: "review",
          description: "Spaced repetition: the caller's questions due for review (FSRS).",
        },
      ],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: "http",
            scheme: "bearer",
            bearerFormat: "JWT",
            description: "A JWT whose `sub` is the user id; it must carry `exp`.",
          },
        },
      },
    },
  });
}

/** Serves the generated document at GET /openapi.json, with no authentication. */
export async function openApiRoute(app: App) {
  let body: string | undefined;
  app.get("/openapi.json", async (_request, reply) => {
    body ??= JSON.stringify(app.swagger());
    return reply.type("application/json; charset=utf-8").send(body);
  });
}
