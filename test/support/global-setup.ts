import { createConnection } from "mysql2/promise";
import { testServerUrl } from "./database.js";

/**
 * Fails the run at once, with the fix, when no MySQL/MariaDB answers:
 * the integration tests need a real one.
 */
export default async function setup() {
  const url = testServerUrl();
  try {
    const connection = await createConnection({ uri: url, connectTimeout: 3000 });
    await connection.end();
  } catch (err) {
    throw new Error(
      `no MySQL/MariaDB at ${url} (${String(err)}). Start one, or set TEST_DATABASE_URL=mysql://user:pass@host:port/`,
    );
  }
}
