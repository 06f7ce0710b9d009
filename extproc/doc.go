// Package extproc is the response seam: an Envoy external processor
// (envoy.service.ext_proc.v3.ExternalProcessor/Process, one bidirectional
// stream per HTTP stream) served next to extauthz's Authorization/Check. It
// handles only what needs the response:
//
//   - list answers (tools/list, prompts/list, resources/list,
//     resources/templates/list, tasks/list; MCP 2025-06-18, 2025-11-25,
//     2026-07-28) are filtered to what the caller could use, each item
//     decided as its call would be (decision.ListItems), in application/json
//     (BUFFERED) and text/event-stream (STREAMED) answers, by shape on
//     every stream it sees (another id, a GET stream, a batch);
//   - nextCursor is sealed to the principal, server, method and policy
//     version (internal/cursor), and a list request's sealed params.cursor
//     is opened back into the upstream's own (request body, BUFFERED);
//   - filtered lists get cache-control: private, no-store, and on MCP
//     2026-07-28 cacheScope "private" and the configured ttlMs;
//   - task ids of CreateTaskResult answers are bound to their creator
//     (state.Tasks); tasks/list answers keep only the caller's tasks.
//
// The stream, as Envoy's ext_proc filter drives it (Envoy source
// source/extensions/filters/http/ext_proc/ext_proc.cc, processor_state.cc):
//
//  1. Every message carries the forwarded dynamic metadata; the processor
//     reads Check's namespace envoy.filters.http.ext_authz (decision_id,
//     method, server, principal, policy_version, and when Check sends them
//     rpc_id, protocol_version). A 2xx JSON or SSE answer on a stream
//     without a decision_id is refused (503): a processed route always
//     follows an allowed Check. Non-2xx, non-JSON, non-SSE answers it was
//     not asked about (Envoy's local replies since PR #41769) pass.
//  2. request_headers (list and GET routes, request_header_mode SEND):
//     the bearer token is verified again through the shared
//     bearer.TokenVerifier for its claims (DPoP is not checked again: Check
//     consumed the proof's jti on this request); a subject or issuer other
//     than Check's principal's is refused.
//  3. request_body (list routes, request_body_mode BUFFERED): a sealed
//     params.cursor is opened; an invalid one is answered -32602.
//  4. response_headers: mode_override BUFFERED for JSON (and any other 2xx
//     or non-2xx body it must look into), STREAMED for SSE; 204/304/202
//     and HEAD get none. A content-encoding other than identity is refused
//     (502): a compressed list cannot be filtered.
//  5. response_body: BUFFERED: one message with the whole body, answered
//     with the rewritten body and its content-length in the same
//     BodyResponse (Envoy rejects a length mismatch). STREAMED: every chunk
//     is answered at once with the bytes released (possibly none): complete
//     events passed byte for byte, the event carrying a list rewritten as
//     one data line, an incomplete event held (4 MiB cap), an event that
//     cannot be filtered (or an ambiguous, over-cap or unparseable one a
//     client would read) replaced by a JSON-RPC error event with no event
//     name; at end_of_stream the rest is released.
//
// Sealed cursors need both filters. ext_authz cannot change a request body
// (OkHttpResponse carries headers only, external_auth.proto), so Check only
// verifies a list request's sealed params.cursor (invalid_params when it was
// sealed for another principal, server, method or policy version), and the
// processor replaces it by the upstream's own cursor in the request body
// (list routes with request_body_mode BUFFERED, as every shipped config
// has; the body is small). Without that route mode the upstream would
// receive the sealed cursor: leave --cursor-key-file unset then, and cursors
// pass as the upstream issued them. The answer to the response headers
// keeps the request body mode in its mode_override (BUFFERED once a request
// body was seen), which the filter's allowed_override_modes must list
// (envoy.ProcessorOverride).
//
// The processor never ends a stream with gRPC OK on its own: Envoy passes
// the rest of a body unprocessed after a clean close. It returns only when
// Envoy closes the stream, or with a non-OK status on a fault (a recovered
// panic included), on which Envoy answers status_on_error or resets the
// downstream stream.
//
// What it does not do: it does not page on the caller's behalf (pages are
// filtered as they come and may shrink, even to empty, nextCursor kept);
// it does not check OAuth scopes per item; request trailers and
// FULL_DUPLEX_STREAMED are not used.
package extproc
