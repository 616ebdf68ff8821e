import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConnection } from "mysql2/promise";

/**
 * Throwaway MariaDB servers for `npm run test:cluster`: a 3-node Galera
 * cluster and a primary with an async replica, all on 127.0.0.1 with their
 * own ports, datadirs, sockets and pid files under one temp dir. Never the
 * server on 3306. mariadbd refuses to run as root, so each runs `--user=mysql`
 * (the tests run as root, as CI does, to be allowed that).
 */

const GALERA = "/usr/lib/galera/libgalera_smm.so";

/** Ports: SQL 13401-13409, Galera gcomm/IST/SST 14401-14429 (node i: 1440i*, see below). */
export const PORTS = {
  galeraSql: [13401, 13402, 13403],
  primarySql: 13404,
  replicaSql: 13405,
  /** gcomm, IST, SST of Galera node i (0-based): 14401+10i, 14402+10i, 14403+10i. */
  galera: (i: number) => ({ gcomm: 14401 + 10 * i, ist: 14402 + 10 * i, sst: 14403 + 10 * i }),
};

export interface Server {
  name: string;
  port: number;
  /** `mysql://root@127.0.0.1:PORT/` */
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Where every server of this run lives; removed by `removeAll()`. */
export class ServerSet {
  readonly dir = mkdtempSync(join(tmpdir(), "practice-cluster-"));
  readonly servers: Server[] = [];
  #closed = false;
  /** Last resort if this process exits without removeAll(): no server outlives it. */
  readonly #killAll = () => {
    for (const s of this.servers) s.process.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  };

  constructor() {
    chmodSync(this.dir, 0o755);
    // mariadbd runs as mysql: it writes its socket, pid file and log here.
    chownSync(this.dir, uid("mysql"), gid("mysql"));
    process.on("exit", this.#killAll);
  }

  /**
   * A server's own temp dir. mariadbd deletes every `#sql*` file in its tmpdir as it starts:
   * sharing /tmp, a new server would delete the temp tables of the one on 3306 under its queries.
   */
  private tmpdirOf(name: string): string {
    const dir = join(this.dir, `${name}-tmp`);
    mkdirSync(dir, { recursive: true });
    chownSync(dir, uid("mysql"), gid("mysql"));
    return dir;
  }

  /** Initialises a datadir (mariadb-install-db), as mysql. */
  private install(name: string): string {
    const datadir = join(this.dir, name);
    installDatadir(datadir, this.tmpdirOf(name));
    return datadir;
  }

  /** Writes a node's option file and starts mariadbd with it; resolves when it answers SQL. */
  private async start(
    name: string,
    port: number,
    options: Record<string, string | number | null>,
    extraArgs: string[] = [],
    initialise = true,
  ): Promise<Server> {
    // A server left from an earlier run would answer in place of this one.
    if (await portAnswers(port)) throw new Error(`port ${port} is in use: stop what runs there`);
    const datadir = initialise ? this.install(name) : join(this.dir, name);
    if (!initialise) {
      mkdirSync(datadir, { recursive: true });
      chownSync(datadir, uid("mysql"), gid("mysql"));
    }
    const cnf = join(this.dir, `${name}.cnf`);
    writeOptionFile(cnf, {
      datadir,
      tmpdir: this.tmpdirOf(name),
      port,
      socket: join(this.dir, `${name}.sock`),
      "pid-file": join(this.dir, `${name}.pid`),
      "log-error": join(this.dir, `${name}.err`),
      ...options,
    });
    return this.launch(
      name,
      "127.0.0.1",
      port,
      join(this.dir, `${name}.err`),
      "/usr/sbin/mariadbd",
      [`--defaults-file=${cnf}`, ...extraArgs],
    );
  }

  /** Starts `command` (mariadbd, directly or through unshare) and resolves when it answers SQL. */
  private async launch(
    name: string,
    host: string,
    port: number,
    errorLog: string,
    command: string,
    args: string[],
  ): Promise<Server> {
    // removeAll() may have run while this one was being prepared (Ctrl-C during the build).
    if (this.#closed) throw new Error("the servers are being removed");
    const child = spawn(command, args, { stdio: "ignore" });
    const url = `mysql://root@${host}:${port}/`;
    const server: Server = {
      name,
      port,
      url,
      process: child,
      stop: () => stopProcess(child),
    };
    this.servers.push(server);
    await waitForSql(url, child, errorLog);
    return server;
  }

  /**
   * Two servers that look the same from SQL: one option file, one port, one data directory
   * path, the same host name and server_id, on 127.0.0.1 and 127.0.0.2. The second runs in a
   * mount namespace of its own where its own folder is mounted over the first's path
   * (`unshare -m`, a bind mount), as two containers of one image behind a balancer are.
   */
  async twins(name: string, port: number): Promise<[Server, Server]> {
    for (const host of ["127.0.0.1", "127.0.0.2"]) {
      if (await portAnswers(port, host)) throw new Error(`${host}:${port} is in use`);
    }
    const [seen, hidden] = ["a", "b"].map((side) => join(this.dir, `${name}-${side}`)) as [
      string,
      string,
    ];
    // Each folder holds all of a server's files, at the paths the first one has.
    const files = {
      datadir: join(seen, "data"),
      tmpdir: join(seen, "tmp"),
      port,
      socket: join(seen, "mysqld.sock"),
      "pid-file": join(seen, "mysqld.pid"),
      "log-error": join(seen, "mysqld.err"),
    };
    for (const root of [seen, hidden]) {
      for (const dir of [root, join(root, "tmp")]) {
        mkdirSync(dir);
        chownSync(dir, uid("mysql"), gid("mysql"));
      }
      installDatadir(join(root, "data"), join(root, "tmp"));
      writeOptionFile(join(root, "my.cnf"), files);
    }
    const cnf = join(seen, "my.cnf");
    const first = await this.launch(
      `${name}-a`,
      "127.0.0.1",
      port,
      files["log-error"],
      "/usr/sbin/mariadbd",
      [`--defaults-file=${cnf}`, "--bind-address=127.0.0.1"],
    );
    // sh execs mariadbd: the child's pid is the server's, for stop().
    const second = await this.launch(
      `${name}-b`,
      "127.0.0.2",
      port,
      join(hidden, "mysqld.err"),
      "/usr/bin/unshare",
      [
        "-m",
        "sh",
        "-c",
        'mount --bind "$0" "$1" && exec /usr/sbin/mariadbd --defaults-file="$1/my.cnf" --bind-address=127.0.0.2',
        hidden,
        seen,
      ],
    );
    return [first, second];
  }

  /**
   * A 3-node Galera cluster: node 1 bootstraps (`--wsrep-new-cluster`), the
   * others join by rsync SST one after the other.
   */
  async galera(): Promise<Server[]> {
    const members = PORTS.galeraSql.map((_, i) => `127.0.0.1:${PORTS.galera(i).gcomm}`).join(",");
    const nodes: Server[] = [];
    for (const [i, port] of PORTS.galeraSql.entries()) {
      const { gcomm, ist, sst } = PORTS.galera(i);
      const options = {
        "wsrep-on": "ON",
        "wsrep-provider": GALERA,
        "wsrep-cluster-name": "practice-test",
        "wsrep-cluster-address": `gcomm://${members}`,
        "wsrep-node-name": `galera${i + 1}`,
        "wsrep-node-address": `127.0.0.1:${gcomm}`,
        "wsrep-node-incoming-address": `127.0.0.1:${port}`,
        "wsrep-provider-options": `"gmcast.listen_addr=tcp://127.0.0.1:${gcomm};ist.recv_addr=127.0.0.1:${ist};gcache.size=64M"`,
        "wsrep-sst-method": "rsync",
        "wsrep-sst-receive-address": `127.0.0.1:${sst}`,
        "binlog-format": "ROW",
        "default-storage-engine": "InnoDB",
        "innodb-autoinc-lock-mode": 2,
      };
      // Joiners get their data by SST: an empty datadir is enough.
      const first = i === 0;
      const node = await this.start(
        `galera${i + 1}`,
        port,
        options,
        first ? ["--wsrep-new-cluster"] : [],
        first,
      );
      nodes.push(node);
      if (!first) await waitForSynced(node.url);
    }
    for (const node of nodes) await waitForSynced(node.url, 3);
    return nodes;
  }

  /** One server of its own (its own datadir and port), with extra `options` for its option file. */
  standalone(
    name: string,
    port: number,
    options: Record<string, string | number | null> = {},
  ): Promise<Server> {
    return this.start(name, port, options);
  }

  /** A primary (binlog, GTIDs) and an async replica of it, `read_only`. */
  async primaryAndReplica(): Promise<{ primary: Server; replica: Server }> {
    const common = { "binlog-format": "ROW", "log-bin": "mysql-bin", "log-slave-updates": null };
    const primary = await this.start("primary", PORTS.primarySql, { ...common, "server-id": 1 });
    const replica = await this.start("replica", PORTS.replicaSql, {
      ...common,
      "server-id": 2,
      "read-only": "ON",
    });
    const c = await createConnection({ uri: replica.url });
    try {
      await c.query(
        `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${PORTS.primarySql}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos`,
      );
      await c.query("START SLAVE");
    } finally {
      await c.end();
    }
    return { primary, replica };
  }

  /** Stops every server started (SIGTERM, then SIGKILL) and removes the temp dir. */
  async removeAll(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.servers.map((s) => s.stop()));
    this.servers.length = 0;
    process.off("exit", this.#killAll);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Initialises `datadir` (mariadb-install-db), as mysql. */
function installDatadir(datadir: string, tmpdir: string): void {
  mkdirSync(datadir);
  chownSync(datadir, uid("mysql"), gid("mysql"));
  execFileSync(
    "mariadb-install-db",
    [
      "--no-defaults",
      "--user=mysql",
      `--datadir=${datadir}`,
      `--tmpdir=${tmpdir}`,
      "--auth-root-authentication-method=normal",
      "--skip-test-db",
    ],
    { stdio: "pipe" },
  );
}

/** A server's option file: the test defaults, then `options` (a null value is a bare flag). */
function writeOptionFile(file: string, options: Record<string, string | number | null>): void {
  const lines = Object.entries({
    "bind-address": "127.0.0.1",
    user: "mysql",
    "skip-name-resolve": null,
    "innodb-buffer-pool-size": "64M",
    "innodb-log-file-size": "48M",
    "innodb-flush-log-at-trx-commit": 2,
    "performance-schema": "OFF",
    "max-connections": 300,
    ...options,
  }).map(([k, v]) => (v === null ? k : `${k}=${v}`));
  writeFileSync(file, `[mysqld]\n${lines.join("\n")}\n`);
  chmodSync(file, 0o644);
}

function portAnswers(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function uid(user: string): number {
  return Number(execFileSync("id", ["-u", user]).toString().trim());
}

function gid(user: string): number {
  return Number(execFileSync("id", ["-g", user]).toString().trim());
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

async function waitForSql(url: string, child: ChildProcess, errorLog: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      const log = existsSync(errorLog)
        ? execFileSync("tail", ["-n", "30", errorLog]).toString()
        : "";
      throw new Error(`mariadbd for ${url} exited (${child.exitCode}):\n${log}`);
    }
    try {
      const c = await createConnection({ uri: url, connectTimeout: 1000 });
      await c.end();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`no SQL on ${url}: ${String(err)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Waits until the node is Synced (and, with `size`, the cluster has that many members). */
export async function waitForSynced(
  url: string,
  size?: number,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const c = await createConnection({ uri: url, connectTimeout: 1000 });
      try {
        const [rows] = await c.query(
          "SHOW STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status')",
        );
        const status = Object.fromEntries(
          (rows as { Variable_name: string; Value: string }[]).map((r) => [
            r.Variable_name,
            r.Value,
          ]),
        );
        if (
          status.wsrep_local_state_comment === "Synced" &&
          status.wsrep_cluster_status === "Primary" &&
          (size === undefined || Number(status.wsrep_cluster_size) === size)
        ) {
          return;
        }
      } finally {
        await c.end();
      }
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not become Synced`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
