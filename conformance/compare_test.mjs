// Tests of compare.mjs on made-up result folders: `node --test
// conformance/compare_test.mjs` (Node 20 or 22; run.sh runs it before the
// suite, so a broken comparison cannot pass CI).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const compare = join(dirname(fileURLToPath(import.meta.url)), "compare.mjs");
const race = ["tools-call-sampling", "tools-call-elicitation"];
let stamp = 0;

// work(runs): a work folder; runs maps a folder (direct, sidecar,
// rerun-R-A) to {scenario: {checkID: "STATUS" or "STATUS: errorMessage"}}.
function work(runs) {
  const w = mkdtempSync(join(tmpdir(), "compare-test-"));
  for (const [run, scenarios] of Object.entries(runs)) {
    for (const [sc, checks] of Object.entries(scenarios)) {
      const ms = String(stamp++ % 1000).padStart(3, "0");
      const d = join(w, run, `server-${sc}-2026-12-06T22-37-05-${ms}Z`);
      mkdirSync(d, { recursive: true });
      const list = Object.entries(checks).map(([id, v]) => {
        const [status, ...err] = v.split(":"); // "FAILURE:why" carries an errorMessage
        return err.length ? { id, name: id, status, errorMessage: err.join(":").trim() } : { id, name: id, status };
      });
      writeFileSync(join(d, "checks.json"), JSON.stringify(list));
    }
  }
  return w;
}

function run(w, ...args) {
  const r = spawnSync(process.execPath, [compare, ...args], { encoding: "utf8" });
  rmSync(w, { recursive: true, force: true });
  return r;
}

const ok = { ping: { ping: "SUCCESS" }, "tools-list": { "tools-list": "SUCCESS" } };

test("every check that succeeds directly succeeds through the sidecar: exit 0 and the counts", () => {
  const w = work({ direct: ok, sidecar: ok });
  const r = run(w, "report", w, "ping tools-list", ...race);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^direct: 2 of 2 checks succeed \(2 scenarios\)$/m);
  assert.match(r.stdout, /^of the 2 applicable checks that succeed directly: 2 pass through the sidecar \(0 of them on a race rerun\), 0 fail$/m);
});

test("a check that succeeds directly and fails through the sidecar fails the run, reruns or not", () => {
  const w = work({
    direct: ok,
    sidecar: { ping: { ping: "FAILURE" }, "tools-list": { "tools-list": "SUCCESS" } },
    "rerun-1-1": { ping: { ping: "SUCCESS" } }, // ping is no race scenario: ignored
  });
  const r = run(w, "report", w, "ping tools-list", ...race);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^FAIL ping \/ ping: SUCCESS directly, FAILURE through the sidecar$/m);
});

test("a check that fails directly is not required through the sidecar", () => {
  const w = work({
    direct: { ping: { ping: "SUCCESS", extra: "FAILURE" } },
    sidecar: { ping: { ping: "SUCCESS", extra: "FAILURE" } },
  });
  const r = run(w, "report", w, "ping", ...race);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, /^direct: 1 of 2 checks succeed/m);
});

const timedOut = "FAILURE: Failed: MCP error -32001: Request timed out";

test("a race scenario that lost the race passes when one whole rerun passes, and says so", () => {
  const direct = { "tools-call-sampling": { "tools-call-sampling": "SUCCESS" } };
  const w = work({
    direct,
    sidecar: { "tools-call-sampling": { "tools-call-sampling": timedOut } },
    "rerun-1-1": { "tools-call-sampling": { "tools-call-sampling": timedOut } },
    "rerun-1-2": direct,
  });
  const r = run(w, "report", w, "tools-call-sampling", ...race);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, /^race tools-call-sampling: tools-call-sampling lost the GET-stream race on the first pass \(tools-call-sampling: FAILURE \(Failed: MCP error -32001: Request timed out\)\); 1 of 2 reruns passed \(first: rerun 1\.2, round\.attempt\)$/m);
  assert.match(r.stdout, /1 pass through the sidecar \(1 of them on a race rerun\), 0 fail$/m);
});

test("a race scenario that never passes fails", () => {
  const w = work({
    direct: { "tools-call-sampling": { "tools-call-sampling": "SUCCESS" } },
    sidecar: { "tools-call-sampling": { "tools-call-sampling": timedOut } },
    "rerun-1-1": { "tools-call-sampling": { "tools-call-sampling": timedOut } },
  });
  const r = run(w, "report", w, "tools-call-sampling", ...race);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^FAIL tools-call-sampling \/ tools-call-sampling: SUCCESS directly, FAILURE \(Failed: MCP error -32001: Request timed out\) through the sidecar$/m);
  assert.match(r.stdout, /^  rerun 1\.1 of tools-call-sampling: tools-call-sampling FAILURE/m);
});

test("a race scenario failing otherwise than by the race's timeout fails, whatever the reruns", () => {
  const direct = { "tools-call-elicitation": { "tools-call-elicitation": "SUCCESS" } };
  for (const runs of [
    { sidecar: { "tools-call-elicitation": { "tools-call-elicitation": "FAILURE: Failed: MCP error -32010: Forbidden by policy" } }, "rerun-1-1": direct },
    { sidecar: { "tools-call-elicitation": { "tools-call-elicitation": timedOut } },
      "rerun-1-1": { "tools-call-elicitation": { "tools-call-elicitation": "FAILURE: wrong content" } }, "rerun-1-2": direct },
  ]) {
    const w = work({ direct, ...runs });
    const r = run(w, "report", w, "tools-call-elicitation", ...race);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stdout, /^FAIL tools-call-elicitation \/ tools-call-elicitation: SUCCESS directly, FAILURE/m);
  }
});

test("a rerun must pass every check of the scenario, not one each", () => {
  const direct = { "tools-call-elicitation": { a: "SUCCESS", b: "SUCCESS" } };
  const w = work({
    direct,
    sidecar: { "tools-call-elicitation": { a: timedOut } },
    "rerun-1-1": { "tools-call-elicitation": { a: "SUCCESS", b: timedOut } },
    "rerun-1-2": { "tools-call-elicitation": { a: timedOut } },
  });
  const r = run(w, "report", w, "tools-call-elicitation", ...race);
  assert.equal(r.status, 1, r.stdout);
});

test("a scenario missing from either pass fails", () => {
  const w = work({ direct: ok, sidecar: { ping: { ping: "SUCCESS" } } });
  const r = run(w, "report", w, "ping tools-list", ...race);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^FAIL tools-list: no results through the sidecar \(the scenario did not finish\)$/m);
});

test("nothing succeeding directly fails", () => {
  const w = work({ direct: { ping: { ping: "FAILURE" } }, sidecar: { ping: { ping: "FAILURE" } } });
  assert.equal(run(w, "report", w, "ping", ...race).status, 1);
});

test("the DNS-rebinding rejection is listed as not applicable, not counted", () => {
  const dns = { "dns-rebinding-protection": { "localhost-host-rebinding-rejected": "SUCCESS", "localhost-host-valid-accepted": "SUCCESS" } };
  const w = work({
    direct: dns,
    sidecar: { "dns-rebinding-protection": { "localhost-host-rebinding-rejected": "FAILURE", "localhost-host-valid-accepted": "SUCCESS" } },
  });
  const r = run(w, "report", w, "dns-rebinding-protection", ...race);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, /^not applicable behind an authenticating sidecar \(succeeds directly, not counted\): dns-rebinding-protection\/localhost-host-rebinding-rejected$/m);
  assert.match(r.stdout, /^of the 1 applicable checks/m);
});

test("pending lists only race scenarios that lost every attempt to the race", () => {
  const direct = {
    "tools-call-sampling": { s: "SUCCESS" },
    "tools-call-elicitation": { e: "SUCCESS" },
    "elicitation-sep1034-defaults": { d: "SUCCESS" },
    ping: { ping: "SUCCESS" },
  };
  const w = work({
    direct,
    sidecar: {
      "tools-call-sampling": { s: timedOut },
      "tools-call-elicitation": { e: timedOut },
      "elicitation-sep1034-defaults": { d: "FAILURE: Failed: MCP error -32010: Forbidden by policy" },
      ping: { ping: "FAILURE" },
    },
    "rerun-1-1": { "tools-call-elicitation": { e: "SUCCESS" } },
  });
  const r = run(w, "pending", w, ...race, "elicitation-sep1034-defaults", "ping");
  assert.equal(r.status, 0);
  assert.equal(r.stdout, "tools-call-sampling\n");
});
