// Runs the shared vectors (mcpdecision/testdata/vectors.json) through this
// verifier: every verdict must be the vector's, and every accepted vector's
// arguments digest the service's (args_jcs). Exit status 1 on any failure.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createVerifier, staticKeys, callOf, argumentsDigest, MemoryReplay, DecisionError } from '../index.js';

const file = process.argv[2];
const { keys, vectors } = JSON.parse(readFileSync(file, 'utf8'));
let failed = 0;
for (const v of vectors) {
  const now = () => v.now;
  const replay = new MemoryReplay(now);
  for (const id of v.used ?? []) await replay.claim(id, v.now + 60);
  const verifier = createVerifier({ audience: v.audience, keys: staticKeys(keys), replay, policyVersions: v.policy_versions ?? [], now });
  const msg = v.message;
  let got;
  try {
    await verifier.verify(v.statement === null ? [] : [v.statement], callOf(msg.method, msg.params));
    got = 'ok';
  } catch (e) {
    got = e instanceof DecisionError ? e.reason : `not a DecisionError: ${e}`;
  }
  if (got !== v.want) {
    failed++;
    console.log(`FAIL ${v.name}: got ${got}, want ${v.want}`);
  }
  if (v.args_jcs) {
    const want = 'sha256:' + createHash('sha256').update(v.args_jcs, 'utf8').digest('hex');
    const d = argumentsDigest(msg.params.arguments);
    if (d !== want) {
      failed++;
      console.log(`FAIL ${v.name}: arguments digest ${d}, the service's ${want}`);
    }
  }
}
console.log(`${vectors.length - failed}/${vectors.length} vectors passed`);
process.exit(failed ? 1 : 0);
