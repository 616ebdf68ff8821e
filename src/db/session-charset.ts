import type { Ask } from "./session-ask.js";
import { UnusableSession } from "./unusable-session.js";

/**
 * Sent first on every connection: the server may ignore the character set asked for in the
 * handshake (character-set-client-handshake=OFF), or init_connect may set another; a SET
 * NAMES after connecting holds. utf8mb4's default collation is the one `_utf8mb4` literals
 * take (inline-values.ts), so the service's own quoted text compares with them.
 */
export const PIN_CHARSET = "SET NAMES utf8mb4";

/** What the session then uses, for the set-up's first SELECT. */
export const CHARSET_FACTS =
  "@@character_set_client AS charsetClient, @@character_set_connection AS charsetConnection, @@character_set_results AS charsetResults, @@collation_connection AS collation, COLLATION(_utf8mb4'') AS literalCollation";

type Facts = Record<string, unknown>;

/**
 * Checks what the session uses after PIN_CHARSET (`facts`, CHARSET_FACTS read): client,
 * connection and results utf8mb4, the connection's collation the literals'; a collation
 * that differs is pinned with SET NAMES … COLLATE and read again. Throws UnusableSession.
 */
export async function checkCharset(ask: Ask, facts: Facts): Promise<void> {
  let now = facts;
  const literals = String(facts.literalCollation);
  if (wrongCharsets(now).length === 0 && now.collation !== literals) {
    // A name the server gave; checked, as it goes into the statement's text.
    if (!/^utf8mb4_[a-z0-9_]+$/.test(literals)) {
      throw new UnusableSession(`gives utf8mb4 literals the collation ${literals}`);
    }
    await ask(`SET NAMES utf8mb4 COLLATE ${literals}`);
    [now = {}] = await ask(`SELECT ${CHARSET_FACTS}`);
  }
  const wrong = wrongCharsets(now);
  if (wrong.length === 0 && now.collation !== literals) {
    wrong.push(`collation_connection ${String(now.collation)}`);
  }
  if (wrong.length > 0) {
    throw new UnusableSession(
      `keeps sessions at ${wrong.join(", ")} after SET NAMES utf8mb4: text would not read back as written, a 4-byte character as "?" (set character-set-server=utf8mb4 and character-set-client-handshake=ON, and remove SET NAMES from init_connect and from a proxy's session settings)`,
    );
  }
}

function wrongCharsets(facts: Facts): string[] {
  const used = {
    character_set_client: facts.charsetClient,
    character_set_connection: facts.charsetConnection,
    character_set_results: facts.charsetResults,
  };
  return Object.entries(used)
    .filter(([, charset]) => charset !== "utf8mb4")
    .map(([name, charset]) => `${name} ${String(charset)}`);
}
