// compare.mjs: reads the checks.json files the conformance suite wrote under
// WORK/direct, WORK/sidecar and WORK/rerun-ROUND-ATTEMPT (one folder per
// scenario, named server-SCENARIO-TIMESTAMP) and compares them. Node 20 or 22.
//
//   node compare.mjs pending WORK SCENARIO...  the race scenarios (arguments)
//       to rerun: no attempt through the sidecar passed yet, and every attempt
//       that did not pass lost the race: one name per line
//   node compare.mjs report WORK EXPECTED RACE...  the report; exit 1 when a
//       check that succeeds directly does not succeed through the sidecar, or
//       when EXPECTED (space-separated scenario names) are not all present in
//       both passes, or when nothing succeeds directly
//
// An attempt (the first pass or a rerun) passes a scenario when every check
// that succeeded directly succeeded in it. It lost the GET-stream race when it
// did not pass and each of its failed checks failed with the SDK's request
// timeout ("Request timed out": the server's request went to a GET stream
// that was not open yet; checks after it are missing). A race scenario (RACE)
// passes through the sidecar when no attempt failed otherwise and one rerun
// passed; any other scenario must pass on the first pass.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

// Not applicable behind an authenticating sidecar: the check wants a foreign
// Host refused by the server; the sidecar rewrites Host to the upstream's and
// the request carries the caller's token (README of this folder).
const notApplicable = new Set(["dns-rebinding-protection/localhost-host-rebinding-rejected"]);
const raceTimeout = /\bRequest timed out\b/;

// checks(dir) -> Map scenario -> Map checkID -> {st: status, err: errorMessage}
function checks(dir) {
  const out = new Map();
  if (!existsSync(dir)) return out;
  for (const d of readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
    const f = join(dir, d, "checks.json");
    if (!m || !existsSync(f)) continue;
    const byID = new Map();
    for (const c of JSON.parse(readFileSync(f, "utf8"))) {
      if (["SUCCESS", "FAILURE", "WARNING"].includes(c.status)) byID.set(c.id, { st: c.status, err: c.errorMessage ?? "" });
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

const status = (attempt, sc, id) => attempt.get(sc)?.get(id)?.st;

// wanted(sc): the check ids of scenario sc that succeed directly and apply.
function wanted(sc) {
  return [...(direct.get(sc) ?? new Map())]
    .filter(([id, c]) => c.st === "SUCCESS" && !notApplicable.has(`${sc}/${id}`))
    .map(([id]) => id);
}

function passes(attempt, sc) {
  return attempt.has(sc) && wanted(sc).every((id) => status(attempt, sc, id) === "SUCCESS");
}

function lostRace(attempt, sc) {
  const got = attempt.get(sc);
  if (got === undefined || passes(attempt, sc)) return false;
  const failed = [...got.values()].filter((c) => c.st === "FAILURE");
  return failed.length > 0 && failed.every((c) => raceTimeout.test(c.err));
}

const [mode, work, ...rest] = process.argv.slice(2);
const direct = checks(join(work, "direct"));
const sidecar = checks(join(work, "sidecar"));
const again = reruns(work);
const attempts = (sc) => [sidecar, ...again].filter((a) => a.has(sc));

if (mode === "pending") {
  for (const sc of rest) {
    if (!direct.has(sc) || !sidecar.has(sc)) continue;
    const tried = attempts(sc);
    if (tried.some((a) => passes(a, sc)) || !tried.every((a) => lostRace(a, sc))) continue;
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
  for (const byID of run.values()) for (const c of byID.values()) { all++; if (c.st === "SUCCESS") ok++; }
  return [ok, all];
};
const describe = (attempt, sc, id) => {
  const c = attempt.get(sc)?.get(id);
  return c ? c.st + (c.err ? ` (${c.err})` : "") : "missing";
};
let passed = 0, afterRerun = 0;
const lines = [];
for (const sc of [...direct.keys()].sort()) {
  const ids = wanted(sc);
  const missed = ids.filter((id) => status(sidecar, sc, id) !== "SUCCESS");
  passed += ids.length - missed.length;
  if (missed.length === 0 || !sidecar.has(sc)) continue;
  const tried = attempts(sc);
  const won = again.filter((a) => a.has(sc) && passes(a, sc));
  if (race.has(sc) && won.length > 0 && tried.every((a) => passes(a, sc) || lostRace(a, sc))) {
    afterRerun += missed.length;
    const [timedOutID] = [...sidecar.get(sc)].find(([, c]) => c.st === "FAILURE");
    lines.push(`race ${sc}: ${missed.join(", ")} lost the GET-stream race on the first pass (${timedOutID}: ${describe(sidecar, sc, timedOutID)}); ` +
      `${won.length} of ${tried.length - 1} reruns passed (first: rerun ${won[0].label}, round.attempt)`);
    continue;
  }
  for (const id of missed) {
    bad++;
    lines.push(`FAIL ${sc} / ${id}: SUCCESS directly, ${describe(sidecar, sc, id)} through the sidecar`);
  }
  for (const a of tried.slice(1).filter((a) => !passes(a, sc))) {
    lines.push(`  rerun ${a.label} of ${sc}: ${missed.map((id) => `${id} ${describe(a, sc, id)}`).join("; ")}`);
  }
}
for (const l of lines) console.log(l);
const na = [...notApplicable].filter((k) => {
  const [sc, id] = k.split("/");
  return status(direct, sc, id) === "SUCCESS";
});
if (na.length) console.log(`not applicable behind an authenticating sidecar (succeeds directly, not counted): ${na.join(", ")}`);
const [dOK, dAll] = count(direct);
const [sOK, sAll] = count(sidecar);
console.log(`direct: ${dOK} of ${dAll} checks succeed (${direct.size} scenarios)`);
console.log(`through the sidecar, first pass: ${sOK} of ${sAll} checks succeed (${sidecar.size} scenarios)`);
console.log(`of the ${passed + afterRerun + bad} applicable checks that succeed directly: ${passed + afterRerun} pass through the sidecar (${afterRerun} of them on a race rerun), ${bad} fail`);
process.exit(bad > 0 || incomplete > 0 || passed + afterRerun === 0 ? 1 : 0);
