/**
 * Imported first by every entry point, so it runs before anything native
 * loads: better-sqlite3 crashes without a word on a Node older than 22
 * (a segfault on Node 20). No imports here, and nothing Node 20 cannot parse.
 */

/** The oldest Node major the service runs on (package.json "engines"). */
const NODE_MAJOR_NEEDED = 22;

const major = Number(process.versions.node.split(".")[0]);
if (major < NODE_MAJOR_NEEDED) {
  process.stderr.write(
    `practice-sessions needs Node.js ${NODE_MAJOR_NEEDED} or later (24 recommended); this is Node ${process.versions.node} (${process.execPath}): run it with \`npm start\` (it uses the Node 24 that npm ci puts in node_modules), or install Node 24\n`,
  );
  process.exit(1);
}
