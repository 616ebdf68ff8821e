/**
 * Where the page finds the service, who it is, and which quiz it shows.
 *
 * Served by the service itself (`/practice/`), the page calls its own origin
 * and the start-up line gives the rest:
 *
 *   http://127.0.0.1:8080/practice/?quiz=1#token=eyJ...
 *
 * The token travels in the URL fragment: browsers never send a fragment to
 * the server, so it stays out of request lines, proxies and access logs.
 *
 * On another origin (the Vite dev server, a static host), the query string
 * still works, and Vite env variables baked in at build time are the fallback
 * (`VITE_SERVICE_URL`, `VITE_TOKEN`, `VITE_QUIZ_ID`, `VITE_PROTOCOL`):
 *
 *   index.html?service=http://127.0.0.1:8080&quiz=1&protocol=grpc-web#token=eyJ...
 *
 * A token in a query string lands in history and server logs: demo only. An
 * application gets it from its own sign-in.
 */
export interface PageConfig {
  serviceUrl: string;
  token: string;
  quizId: string;
  /** "connect" (default) or "grpc-web". */
  protocol: "connect" | "grpc-web";
}

/** Where a dev-server page looks for the service when no `service` is given. */
const DEV_SERVICE_URL = "http://127.0.0.1:8080";

export function readConfig(location: Location = window.location): PageConfig {
  const query = new URLSearchParams(location.search);
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  const env = import.meta.env;
  const pick = (name: string, envValue: string | undefined) =>
    (fragment.get(name) ?? query.get(name) ?? envValue ?? "").trim();
  const protocol = pick("protocol", env.VITE_PROTOCOL);
  // A built page is normally served by the service (same origin); the Vite
  // dev server (the only place with hot module replacement) is not the service.
  const onDevServer = import.meta.hot !== undefined;
  const sameOrigin = /^https?:$/.test(location.protocol) && !onDevServer;
  return {
    serviceUrl:
      pick("service", env.VITE_SERVICE_URL) || (sameOrigin ? location.origin : DEV_SERVICE_URL),
    token: pick("token", env.VITE_TOKEN),
    quizId: pick("quiz", env.VITE_QUIZ_ID),
    protocol: protocol === "grpc-web" ? "grpc-web" : "connect",
  };
}
