// Types of @mcp-extauthz/mcp-decision (index.js).

export declare const TYPE: 'mcp-decision+jwt';
export declare const HEADER: 'x-mcp-decision';
export declare const MAX_LIFETIME: 60;
export declare const ISSUED_AT_SKEW: 5;
export declare const CODE_REFUSED: -32016;
export declare const BATCH_METHOD: 'batch';

export type Reason =
  | 'decision_missing'
  | 'decision_malformed'
  | 'decision_unverified'
  | 'decision_unavailable'
  | 'decision_wrong_audience'
  | 'decision_expired'
  | 'decision_wrong_policy'
  | 'decision_mismatch'
  | 'decision_replayed';

export declare const Reasons: Readonly<{
  missing: Reason; malformed: Reason; unverified: Reason; unavailable: Reason; wrongAudience: Reason;
  expired: Reason; wrongPolicy: Reason; mismatch: Reason; replayed: Reason;
}>;

/** The signed decision (the JWS payload). */
export interface Statement {
  iss: string;
  sub: string;
  client_id?: string;
  aud: string;
  server: string;
  method: string;
  target: string;
  args_digest?: string;
  request_digest: string;
  batch?: { method: string; target: string; args_digest: string; request_digest: string }[];
  jti: string;
  policy_version: string;
  rule_id?: string;
  approval_id?: string;
  iat: number;
  exp: number;
}

export interface Call {
  method: string;
  target: string;
  arguments?: unknown;
}

export declare class DecisionError extends Error {
  readonly reason: Reason;
  readonly detail: string;
}

export interface KeySet {
  key(kid: string): Promise<Record<string, unknown>>;
}

export interface ReplayStore {
  /** Record id until `until` (Unix seconds); resolve whether it was fresh. */
  claim(id: string, until: number): Promise<boolean>;
}

export declare class MemoryReplay implements ReplayStore {
  constructor(now?: () => number);
  claim(id: string, until: number): Promise<boolean>;
}

export interface VerifierOptions {
  audience: string;
  keys: KeySet;
  replay?: ReplayStore;
  policyVersions?: string[];
  now?: () => number;
  leeway?: number;
}

export interface Verifier {
  verify(values: string[], call: Call): Promise<Statement>;
}

export declare function argumentsDigest(args: unknown): string;
export declare function callOf(method: string, params: unknown): Call;
export declare function staticKeys(jwks: string | { keys: unknown[] }): KeySet;
export declare function fileKeys(path: string): KeySet;
export declare function remoteKeys(url: string, minIntervalMs?: number): KeySet;
export declare function createVerifier(options: VerifierOptions): Verifier;
export declare function headerValues(headers: unknown): string[];
export declare function decisionOf(extra: unknown): Statement | undefined;
export declare function refusalError(reason: Reason): { code: -32016; message: string; data: { reason: Reason } };
export declare function verifyDecisions<T extends { onmessage?: unknown; send: unknown }>(
  transport: T,
  verifier: Verifier,
  options?: { onRefused?: (error: DecisionError, message: unknown) => void },
): T;
