// compare.mjs: reads the checks.json files the conformance suite wrote under
// WORK/direct, WORK/sidecar and WORK/rerun-ROUND-ATTEMPT (one folder per scenario,
// named server-SCENARIO-TIMESTAMP) and compares them. Run with Node 22.
//
//   node compare.mjs pending WORK SCENARIO...  the race scenarios (arguments)
//       that have not yet passed through the sidecar: one name per line
//   node compare.mjs report WORK EXPECTED RACE...  the report; exit 1 when a
//       check that succeeds directly does not succeed through the sidecar
//       (first pass, or a rerun for a race scenario), or when EXPECTED
//       (space-separated scenario names) are not all present in both runs.
//
// A scenario passes through the sidecar in one attempt when every check that
// succeeded directly succeeded in that attempt. Only a race scenario is ever
// rerun; its checks count as passed after a rerun only when a whole rerun of
// the scenario passes.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

// Not applicable behind an authenticating sidecar: the check models a browser
// on a DNS-rebound name reaching an unauthenticated localhost server; behind
// the sidecar that request also needs the caller's token, and the server sees
// the Host Envoy forwards (README of this folder).
const notApplicable = new Set(["dns-rebinding-protection/localhost-host-rebinding-rejected"]);

// checks(dir) -> Map scenario -> Map checkID -> status
function checks(dir) {
  const out = new Map();
  if (!existsSync(dir)) return out;
  for (const d of readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
    const f = join(dir, d, "checks.json");
    if (!m || !existsSync(f)) continue;
    const byID = new Map();
    for (const c of JSON.parse(readFileSync(f, "utf8"))) {
      if (["SUCCESS", "FAILURE", "WARNING"].includes(c.status)) byID.set(c.id, c.status);
    }
    out.set(m[1], byID);
  }
  return out;
}

function reruns(work) {
  return readdirSync(work)
    .filter((d) => /^rerun-\d+-\d+$/.test(d))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }))
    .map((d) => Object.assign(checks(join(work, d)), { label: d.slice("rerun-".length).replace("-", ".") }));
}

// wanted(direct, sc): the check ids of scenario sc that succeed directly and apply.
function wanted(direct, sc) {
  return [...(direct.get(sc) ?? new Map())]
    .filter(([id, st]) => st === "SUCCESS" && !notApplicable.has(`${sc}/${id}`))
    .map(([id]) => id);
}

function passes(attempt, direct, sc) {
  const got = attempt.get(sc);
  return got !== undefined && wanted(direct, sc).every((id) => got.get(id) === "SUCCESS");
}

const [mode, work, ...rest] = process.argv.slice(2);
const direct = checks(join(work, "direct"));
const sidecar = checks(join(work, "sidecar"));
const again = reruns(work);

if (mode === "pending") {
  for (const sc of rest) {
    if (!direct.has(sc)) continue;
    if (passes(sidecar, direct, sc) || again.some((a) => passes(a, direct, sc))) continue;
    console.log(sc);
  }
  process.exit(0);
}
if (mode !== "report") {
  console.error("usage: compare.mjs pending|report WORK ...");
  process.exit(2);
}

const expected = rest[0].split(/\s+/).filter(Boolean);
const race = new Set(rest.slice(1));
let bad = 0, incomplete = 0;
for (const sc of expected) {
  for (const [name, run] of [["directly", direct], ["through the sidecar", sidecar]]) {
    if (!run.has(sc)) {
      console.log(`FAIL ${sc}: no results ${name} (the scenario did not finish)`);
      incomplete++;
    }
  }
}
const count = (run) => {
  let ok = 0, all = 0;
  for (const byID of run.values()) for (const st of byID.values()) { all++; if (st === "SUCCESS") ok++; }
  return [ok, all];
};
let passed = 0, afterRerun = 0;
const lines = [];
for (const sc of [...direct.keys()].sort()) {
  const ids = wanted(direct, sc);
  const first = sidecar.get(sc) ?? new Map();
  const missed = ids.filter((id) => first.get(id) !== "SUCCESS");
  passed += ids.length - missed.length;
  if (missed.length === 0) continue;
  const n = again.findIndex((a) => passes(a, direct, sc));
  if (race.has(sc) && n >= 0) {
    afterRerun += missed.length;
    const tried = again.filter((a) => a.has(sc));
    const won = tried.filter((a) => passes(a, direct, sc)).length;
    lines.push(`race ${sc}: ${missed.join(", ")} failed through the sidecar on the first pass; ${won} of ${tried.length} reruns passed (first: rerun ${again[n].label}, round.attempt)`);
    continue;
  }
  for (const id of missed) {
    bad++;
    const tries = race.has(sc) ? ` (and on ${again.filter((a) => a.has(sc)).length} reruns)` : "";
    lines.push(`FAIL ${sc} / ${id}: SUCCESS directly, ${first.get(id) ?? "missing"} through the sidecar${tries}`);
  }
}
for (const l of lines) console.log(l);
const na = [...notApplicable].filter((k) => {
  const [sc, id] = k.split("/");
  return direct.get(sc)?.get(id) === "SUCCESS";
});
if (na.length) console.log(`not applicable behind an authenticating sidecar (succeeds directly, not counted): ${na.join(", ")}`);
const [dOK, dAll] = count(direct);
const [sOK, sAll] = count(sidecar);
console.log(`direct: ${dOK} of ${dAll} checks succeed (${direct.size} scenarios)`);
console.log(`through the sidecar, first pass: ${sOK} of ${sAll} checks succeed (${sidecar.size} scenarios)`);
console.log(`of the ${passed + afterRerun + bad} applicable checks that succeed directly: ${passed + afterRerun} pass through the sidecar (${afterRerun} of them on a race rerun), ${bad} fail`);
process.exit(bad > 0 || incomplete > 0 || passed + afterRerun === 0 ? 1 : 0);
