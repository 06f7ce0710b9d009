// @mcp-extauthz/mcp-decision: verify mcp-extauthz's signed decisions in an
// MCP server built with @modelcontextprotocol/sdk (docs/digests.md, "Signed
// decisions"; the Go twin is github.com/mcp-extauthz/mcp-extauthz/mcpdecision).
//
// mcp-extauthz signs every request it allows into the x-mcp-decision header:
// a compact JWS (RFC 7515) of typ mcp-decision+jwt, EdDSA (Ed25519) or ES256,
// naming the audience, the method, the target and the RFC 8785 digest of
// params.arguments. verifyDecisions(transport, verifier) checks every message
// the transport hands the SDK, immediately before the SDK dispatches it, with
// the digest recomputed over the arguments object the SDK's own JSON parse
// (and its JSON-RPC schema) produced, before the tool's input schema parse.
// A refused request is answered with JSON-RPC error -32016, data.reason; the
// handler never runs. An admitted one reaches the handler with the verified
// statement: decisionOf(extra).

import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import canonicalize from 'canonicalize';
import { compactVerify, importJWK, decodeProtectedHeader, errors as joseErrors } from 'jose';

export const TYPE = 'mcp-decision+jwt';
export const HEADER = 'x-mcp-decision';
export const MAX_LIFETIME = 60;
/** How far ahead of this clock iat may be (seconds), besides the leeway. */
export const ISSUED_AT_SKEW = 5;
export const CODE_REFUSED = -32016;
export const BATCH_METHOD = 'batch';

/** The refusal reasons, in check order (a closed set). */
export const Reasons = Object.freeze({
  missing: 'decision_missing',
  malformed: 'decision_malformed',
  unverified: 'decision_unverified',
  unavailable: 'decision_unavailable',
  wrongAudience: 'decision_wrong_audience',
  expired: 'decision_expired',
  wrongPolicy: 'decision_wrong_policy',
  mismatch: 'decision_mismatch',
  replayed: 'decision_replayed',
});

/** A refusal: reason for the caller (error.data.reason), detail for the log. */
export class DecisionError extends Error {
  constructor(reason, detail) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.reason = reason;
    this.detail = detail ?? '';
  }
}

const refuse = (reason, detail) => new DecisionError(reason, detail);

/**
 * The RFC 8785 digest of arguments as a JSON parse produced them:
 * "sha256:" + lowercase hex of SHA-256 over their canonical form; undefined
 * or null (absent) is {}.
 */
export function argumentsDigest(args) {
  const text = args === undefined || args === null ? '{}' : canonicalize(args);
  if (typeof text !== 'string') throw new Error('arguments have no JSON form');
  return 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');
}

/** RFC 8785's string form (JSON.stringify escapes as RFC 8785 does). */
const jcsString = (s) => JSON.stringify(s);

/**
 * The call a JSON-RPC message names, as the service names it: method,
 * target (params.name of tools/call and prompts/get, params.uri of
 * resources/read|subscribe|unsubscribe, params.ref.name or .uri of
 * completion/complete, the URIs of subscriptions/listen as a JSON array in
 * RFC 8785 string form) and params.arguments of tools/call and prompts/get.
 */
export function callOf(method, params) {
  const p = params && typeof params === 'object' ? params : {};
  const str = (o, k) => (o && typeof o === 'object' && typeof o[k] === 'string' ? o[k] : '');
  const call = { method, target: '', arguments: undefined };
  switch (method) {
    case 'tools/call':
    case 'prompts/get':
      call.target = str(p, 'name');
      if (Object.hasOwn(p, 'arguments') && p.arguments !== null) call.arguments = p.arguments;
      break;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      call.target = str(p, 'uri');
      break;
    case 'completion/complete': {
      const ref = p.ref;
      if (str(ref, 'type') === 'ref/prompt') call.target = str(ref, 'name');
      else if (str(ref, 'type') === 'ref/resource') call.target = str(ref, 'uri');
      break;
    }
    case 'subscriptions/listen': {
      const subs = p.notifications && p.notifications.resourceSubscriptions;
      if (Array.isArray(subs)) call.target = '[' + subs.map((u) => jcsString(typeof u === 'string' ? u : '')).join(',') + ']';
      break;
    }
  }
  return call;
}

/** A replay store in this process: claim(id, untilSeconds) → fresh. */
export class MemoryReplay {
  constructor(now = () => Date.now() / 1000) {
    this.used = new Map();
    this.now = now;
    this.sweep = 0;
  }
  async claim(id, until) {
    const t = this.now();
    if (t - this.sweep > 1) {
      for (const [k, u] of this.used) if (t >= u) this.used.delete(k);
      this.sweep = t;
    }
    const u = this.used.get(id);
    if (u !== undefined && t < u) return false;
    this.used.set(id, until);
    return true;
  }
}

const ALGS = new Set(['EdDSA', 'ES256']);

function publicKeys(jwks) {
  const set = typeof jwks === 'string' ? JSON.parse(jwks) : jwks;
  if (!set || !Array.isArray(set.keys)) throw new Error('not a JWK Set');
  const out = new Map();
  for (const k of set.keys) {
    if ('d' in k) throw new Error(`key ${k.kid}: a private key in a published key set`);
    const ok = (k.kty === 'OKP' && k.crv === 'Ed25519') || (k.kty === 'EC' && k.crv === 'P-256');
    if (ok && typeof k.kid === 'string' && k.kid !== '') out.set(k.kid, k);
  }
  return out;
}

class UnknownKey extends Error {}

/** A fixed key set: a JWK Set (object or JSON text) of public keys. */
export function staticKeys(jwks) {
  const m = publicKeys(jwks);
  return { async key(kid) { const k = m.get(kid); if (!k) throw new UnknownKey(kid); return k; } };
}

/** The key set in a file (the service's --decision-jwks-out), read again when it changes. */
export function fileKeys(path) {
  let seen = '', keys = null, err = null;
  return {
    async key(kid) {
      const s = await stat(path);
      const tag = `${s.mtimeMs}:${s.size}`;
      if (tag !== seen) {
        seen = tag;
        try { keys = publicKeys(await readFile(path, 'utf8')); err = null; } catch (e) { keys = null; err = e; }
      }
      if (err) throw err;
      const k = keys.get(kid);
      if (!k) throw new UnknownKey(kid);
      return k;
    },
  };
}

/** The key set served at url (the service's /decision-jwks.json), fetched again for an unknown kid at most every minIntervalMs. */
export function remoteKeys(url, minIntervalMs = 10_000) {
  let keys = null, fetched = 0;
  return {
    async key(kid) {
      if (keys && keys.has(kid)) return keys.get(kid);
      if (keys && Date.now() - fetched < minIntervalMs) throw new UnknownKey(kid);
      const r = await fetch(url);
      if (!r.ok) throw new Error(`GET ${url}: ${r.status}`);
      keys = publicKeys(await r.text());
      fetched = Date.now();
      const k = keys.get(kid);
      if (!k) throw new UnknownKey(kid);
      return k;
    },
  };
}

const b64json = (s) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));

/**
 * A verifier for one MCP server. options: audience (this server's RFC 8707
 * resource URI, required), keys (staticKeys, fileKeys, remoteKeys;
 * required), replay (a store with claim(id, untilSeconds); default a
 * MemoryReplay), policyVersions (accepted policy_version values; empty: any),
 * now (seconds; default the clock), leeway (seconds of clock skew; 0).
 */
export function createVerifier(options) {
  const { audience, keys, policyVersions = [], leeway = 0 } = options;
  const now = options.now ?? (() => Date.now() / 1000);
  const replay = options.replay ?? new MemoryReplay(now);
  if (!audience || !keys) throw new Error('createVerifier: audience and keys are required');
  return {
    /** values: every value of the header; call: callOf(method, params). Resolves to the statement or rejects with a DecisionError. */
    async verify(values, call) {
      if (!Array.isArray(values) || values.length !== 1 || !values[0]) throw refuse(Reasons.missing, `${values ? values.length : 0} values`);
      const jws = values[0].trim();
      const parts = jws.split('.');
      let header;
      try {
        if (parts.length !== 3) throw new Error('not three parts');
        header = decodeProtectedHeader(jws);
      } catch (e) {
        throw refuse(Reasons.malformed, `not a compact JWS: ${e.message}`);
      }
      const names = Object.keys(header).sort().join(',');
      if (header.typ !== TYPE) throw refuse(Reasons.malformed, `typ ${JSON.stringify(header.typ)}, want ${TYPE}`);
      if (!ALGS.has(header.alg)) throw refuse(Reasons.malformed, `alg ${JSON.stringify(header.alg)}`);
      if (typeof header.kid !== 'string' || header.kid === '' || names !== 'alg,kid,typ') throw refuse(Reasons.malformed, 'header: want alg, kid and typ only');
      let jwk;
      try {
        jwk = await keys.key(header.kid);
      } catch (e) {
        if (e instanceof UnknownKey) throw refuse(Reasons.unverified, `kid ${header.kid} not in the key set`);
        throw refuse(Reasons.unavailable, `key set: ${e.message}`);
      }
      if (jwk.alg && jwk.alg !== header.alg) throw refuse(Reasons.unverified, `alg ${header.alg}, the key's is ${jwk.alg}`);
      let payload;
      try {
        const key = await importJWK(jwk, header.alg);
        ({ payload } = await compactVerify(jws, key, { algorithms: [header.alg] }));
      } catch (e) {
        if (e instanceof joseErrors.JWSSignatureVerificationFailed) throw refuse(Reasons.unverified, 'signature');
        if (e instanceof joseErrors.JOSEError && !(e instanceof joseErrors.JWSInvalid)) throw refuse(Reasons.unverified, e.message);
        throw refuse(Reasons.malformed, e.message);
      }
      let st;
      try {
        st = JSON.parse(Buffer.from(payload).toString('utf8'));
      } catch (e) {
        throw refuse(Reasons.malformed, `payload: ${e.message}`);
      }
      if (!st || typeof st !== 'object' || Array.isArray(st) || !Number.isInteger(st.iat) || !Number.isInteger(st.exp)) {
        throw refuse(Reasons.malformed, 'payload: want an object with integer iat and exp');
      }
      if (st.aud !== audience) throw refuse(Reasons.wrongAudience, `aud ${JSON.stringify(st.aud)}`);
      const t = now();
      if (st.exp - st.iat > MAX_LIFETIME || st.exp <= st.iat) throw refuse(Reasons.expired, `lifetime ${st.exp - st.iat}s`);
      if (t + leeway + ISSUED_AT_SKEW < st.iat) throw refuse(Reasons.expired, 'issued in the future');
      if (t >= st.exp + leeway) throw refuse(Reasons.expired, 'expired');
      if (policyVersions.length > 0 && !policyVersions.includes(st.policy_version)) throw refuse(Reasons.wrongPolicy, `policy_version ${st.policy_version}`);
      let digest;
      try {
        digest = argumentsDigest(call.arguments);
      } catch (e) {
        throw refuse(Reasons.mismatch, `arguments: ${e.message}`);
      }
      let id = st.jti;
      if (st.method === BATCH_METHOD) {
        const i = (Array.isArray(st.batch) ? st.batch : []).findIndex(
          (e) => e && e.method === call.method && e.target === call.target && e.args_digest === digest);
        if (i < 0) throw refuse(Reasons.mismatch, `no batch element is ${call.method} ${call.target}`);
        id = `${st.jti}/${i}`;
      } else if (st.method !== call.method) {
        throw refuse(Reasons.mismatch, `method ${st.method}, the call's is ${call.method}`);
      } else if (st.target !== call.target) {
        throw refuse(Reasons.mismatch, 'target differs');
      } else if (st.args_digest !== digest) {
        throw refuse(Reasons.mismatch, `args_digest ${st.args_digest}, the call's arguments are ${digest}`);
      }
      if (typeof st.jti !== 'string' || st.jti === '') throw refuse(Reasons.malformed, 'no jti');
      let fresh;
      try {
        fresh = await replay.claim(id, st.exp + leeway);
      } catch (e) {
        throw refuse(Reasons.unavailable, `replay store: ${e.message}`);
      }
      if (!fresh) throw refuse(Reasons.replayed, `decision ${id} used before`);
      return st;
    },
  };
}

/** Every value of the x-mcp-decision header in the SDK's requestInfo.headers (a Node headers object or a Fetch Headers). */
export function headerValues(headers) {
  if (!headers) return [];
  let v = typeof headers.get === 'function' ? headers.get(HEADER) : headers[HEADER];
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  // Node and Fetch join repeated headers with ", ": a JWS holds no comma.
  return list.flatMap((s) => String(s).split(',')).map((s) => s.trim());
}

/** The verified statement of the call a handler runs (its extra argument); undefined when none. */
export function decisionOf(extra) {
  return extra && extra.requestInfo ? extra.requestInfo.mcpDecision : undefined;
}

/** The JSON-RPC error of a refusal. */
export function refusalError(reason) {
  return { code: CODE_REFUSED, message: `the signed decision does not admit this call: ${reason}`, data: { reason } };
}

/**
 * Verify every message transport hands the SDK. Call it after
 * `await server.connect(transport)` (which sets transport.onmessage):
 *
 *   await server.connect(transport); verifyDecisions(transport, verifier);
 *
 * Requests and notifications are checked in arrival order; a refused
 * request is answered on the transport with refusalError, a refused
 * notification is dropped; onRefused(error, message) sees each refusal.
 * JSON-RPC responses (a client's answers to server requests) pass
 * unchecked, as they do in the Go adapter.
 */
export function verifyDecisions(transport, verifier, { onRefused } = {}) {
  const inner = transport.onmessage;
  if (typeof inner !== 'function') throw new Error('verifyDecisions: connect the server to the transport first');
  let queue = Promise.resolve();
  transport.onmessage = (message, extra) => {
    queue = queue.then(async () => {
      if (!message || typeof message.method !== 'string') return inner(message, extra);
      const values = headerValues(extra && extra.requestInfo && extra.requestInfo.headers);
      let st;
      try {
        st = await verifier.verify(values, callOf(message.method, message.params));
      } catch (e) {
        const err = e instanceof DecisionError ? e : refuse(Reasons.unavailable, String(e && e.message));
        if (onRefused) onRefused(err, message);
        if ('id' in message) {
          await transport.send({ jsonrpc: '2.0', id: message.id, error: refusalError(err.reason) }, { relatedRequestId: message.id });
        }
        return;
      }
      const requestInfo = { ...(extra && extra.requestInfo), mcpDecision: st };
      return inner(message, { ...extra, requestInfo });
    }).catch((e) => { if (transport.onerror) transport.onerror(e); });
  };
  return transport;
}
