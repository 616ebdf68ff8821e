/**
 * Where the page finds the service, who it is, and which quiz it shows.
 *
 * Each value comes from the page's query string first, then from Vite env
 * variables baked in at build time (`VITE_SERVICE_URL`, `VITE_TOKEN`,
 * `VITE_QUIZ_ID`, `VITE_PROTOCOL`, e.g. in `examples/web/.env.local`):
 *
 *   index.html?service=http://127.0.0.1:8080&token=eyJ...&quiz=1&protocol=grpc-web
 *
 * A token in a URL ends up in browser history and server logs: fine for a
 * local demo, not for an application, which gets it from its own sign-in.
 */
export interface PageConfig {
  serviceUrl: string;
  token: string;
  quizId: string;
  /** "connect" (default) or "grpc-web". */
  protocol: "connect" | "grpc-web";
}

export function readConfig(search: string = window.location.search): PageConfig {
  const query = new URLSearchParams(search);
  const env = import.meta.env;
  const pick = (name: string, envValue: string | undefined) => {
    const value = query.get(name) ?? envValue ?? "";
    return value.trim();
  };
  const protocol = pick("protocol", env.VITE_PROTOCOL);
  return {
    serviceUrl: pick("service", env.VITE_SERVICE_URL) || "http://127.0.0.1:8080",
    token: pick("token", env.VITE_TOKEN),
    quizId: pick("quiz", env.VITE_QUIZ_ID),
    protocol: protocol === "grpc-web" ? "grpc-web" : "connect",
  };
}
