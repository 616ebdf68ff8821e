import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { embedFileDesc } from "@bufbuild/protobuf/codegenv2";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { file_buf_validate_validate } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import { fileService } from "../support/in-process.js";

// docs/versioning.md, checked: buf breaking against the released image passes now and fails
// on a breaking change; the versions agree; the vendored buf/validate is the package's.

const ROOT = resolve(import.meta.dirname, "../..");
const BUF = join(ROOT, "node_modules/.bin/buf");
const IMAGE = join(ROOT, "api/released-image.binpb");
const run = promisify(execFile);
const svc = await fileService();

/** `buf breaking` of a copy of the protos edited by `edit`: its exit code and output. */
async function breakingAfter(edit: (proto: string) => string) {
  const dir = mkdtempSync(join(tmpdir(), "practice-breaking-"));
  try {
    cpSync(join(ROOT, "proto"), join(dir, "proto"), { recursive: true });
    cpSync(join(ROOT, "buf.yaml"), join(dir, "buf.yaml"));
    const file = join(dir, "proto/practice/v1/practice_session_service.proto");
    const before = readFileSync(file, "utf8");
    const after = edit(before);
    expect(after).not.toBe(before);
    writeFileSync(file, after);
    return await run(BUF, ["breaking", dir, "--against", IMAGE]).then(
      ({ stdout }) => ({ code: 0, output: stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, output: e.stdout }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("buf breaking against the released image (api/released-image.binpb)", () => {
  it("passes for the protos as they are", async () => {
    await expect(run(BUF, ["breaking", "--against", IMAGE], { cwd: ROOT })).resolves.toBeDefined();
  });

  it("fails when a field of practice.v1 is renamed", async () => {
    const result = await breakingAfter((p) =>
      p.replace("string user_answer = 3 [", "string answer_text = 3 ["),
    );
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(
      /SubmitAnswerRequest" changed name from "user_answer" to "answer_text"/,
    );
  });

  it("fails when a field is renumbered or removed", async () => {
    const renumbered = await breakingAfter((p) =>
      p.replace("bool has_more = 3;", "bool has_more = 4;"),
    );
    expect(renumbered.code).not.toBe(0);
    const removed = await breakingAfter((p) => p.replace("  bool has_more = 3;\n", ""));
    expect(removed.code).not.toBe(0);
  });

  it("passes when a field is added", async () => {
    const added = await breakingAfter((p) =>
      p.replace("  bool has_more = 3;\n", "  bool has_more = 3;\n  int32 total = 4;\n"),
    );
    expect(added).toEqual({ code: 0, output: "" });
  });

  it("is a step of CI", () => {
    expect(readFileSync(join(ROOT, ".ci/run"), "utf8")).toContain(
      "npx buf breaking --against api/released-image.binpb",
    );
  });
});

describe("versions", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const changelog = readFileSync(join(ROOT, "CHANGELOG.md"), "utf8");

  it("package.json's version is the latest release in CHANGELOG.md", () => {
    const released = [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$/gm)];
    expect(released[0]?.[1]).toBe(pkg.version);
    expect(changelog).toMatch(/^## \[Unreleased\]$/m);
  });

  it("the OpenAPI document's info.version is the service's", async () => {
    const doc = (await (await svc.rest(null, "GET", "/openapi.json")).json()) as {
      info: { version: string };
    };
    expect(doc.info.version).toBe(pkg.version);
  });
});

it("proto/buf/validate/validate.proto is the file whose generated code @bufbuild/protovalidate ships", async () => {
  const { stdout } = await run(
    BUF,
    [
      "build",
      "proto",
      "--path",
      "proto/buf/validate/validate.proto",
      "--exclude-source-info",
      "-o",
      "-",
    ],
    { cwd: ROOT, encoding: "buffer" },
  );
  const vendored = fromBinary(FileDescriptorSetSchema, stdout).file.find(
    (f) => f.name === "buf/validate/validate.proto",
  );
  expect(vendored).toBeDefined();
  if (vendored === undefined) return;
  // buf's image marks its files with an extension of its own (field 8042).
  vendored.$unknown = undefined;
  expect(embedFileDesc(vendored).base64()).toBe(
    embedFileDesc(file_buf_validate_validate.proto).base64(),
  );
});
