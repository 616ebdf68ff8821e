import type { DatabaseConnection, Driver } from "kysely";

/**
 * `driver` handing out `wrap(connection)` in place of each of its
 * connections, one wrapper per connection for its life (Kysely keys its own
 * state by connection).
 */
export function wrapConnections(
  driver: Driver,
  wrap: (connection: DatabaseConnection) => DatabaseConnection,
): Driver {
  const acquire = driver.acquireConnection.bind(driver);
  const release = driver.releaseConnection.bind(driver);
  const wrappers = new WeakMap<DatabaseConnection, DatabaseConnection>();
  const inner = new WeakMap<DatabaseConnection, DatabaseConnection>();
  driver.acquireConnection = async () => {
    const connection = await acquire();
    let wrapper = wrappers.get(connection);
    if (wrapper === undefined) {
      wrapper = wrap(connection);
      wrappers.set(connection, wrapper);
      inner.set(wrapper, connection);
    }
    return wrapper;
  };
  driver.releaseConnection = (wrapper) => release(inner.get(wrapper) ?? wrapper);
  return driver;
}
