// Validate a glTF/GLB file with the Khronos glTF-Validator (npm gltf-validator, pinned in
// package-lock.json) and print one JSON object: the report's issues summary
// {numErrors, numWarnings, numInfos, numHints, messages (first 20: code, severity,
// pointer, message)} plus the validator version. Exit status 0 when the file has no
// errors, 1 when it has, 2 on usage or I/O problems.
// Usage: node tests/gltf/validate.mjs FILE.glb
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import validator from "gltf-validator";

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate.mjs FILE.glb");
  process.exit(2);
}
let bytes;
try {
  bytes = new Uint8Array(await readFile(file));
} catch (err) {
  console.error(`validate.mjs: cannot read ${file}: ${err.message}`);
  process.exit(2);
}
const report = await validator.validateBytes(bytes, {
  uri: basename(file),
  maxIssues: 0,
  // a GLB is self-contained: any external resource is an error of its own
  externalResourceFunction: (uri) => Promise.reject(new Error(`external resource ${uri}`)),
});
const issues = report.issues;
console.log(JSON.stringify({
  validatorVersion: report.validatorVersion,
  numErrors: issues.numErrors,
  numWarnings: issues.numWarnings,
  numInfos: issues.numInfos,
  numHints: issues.numHints,
  messages: issues.messages.slice(0, 20).map((m) => ({
    code: m.code, severity: m.severity, pointer: m.pointer, message: m.message,
  })),
  info: report.info ?? null,
}, null, 1));
process.exit(issues.numErrors === 0 ? 0 : 1);
