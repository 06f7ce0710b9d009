{{/*
Envoy bootstrap for mode=sidecar: envoy/sidecar.yaml with the ports and
limits taken from values. k8s/chart_test.go renders ci/sidecar-values.yaml
(the file's own ports) and requires the result to equal envoy/sidecar.yaml
as a proto, so edit both together.
*/}}
{{- define "mcp-extauthz.envoyConfig" -}}
admin:
  # Loopback only: the admin API can drain, quit and dump config.
  address:
    socket_address: { address: 127.0.0.1, port_value: {{ int .Values.sidecar.envoy.adminPort }} }
static_resources:
  listeners:
  - name: mcp
    address:
      socket_address: { {{ include "mcp-extauthz.envoyListenAddress" . }}, port_value: {{ int .Values.sidecar.envoy.port }} }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: mcp
          codec_type: AUTO
          use_remote_address: true
          normalize_path: true
          merge_slashes: true
          path_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT
          # CGI, WSGI, PHP and Rack upstreams fold '_' into '-': a client's
          # x_mcp_principal would shadow the x-mcp-principal the service sets.
          # Such requests get 400 here (the service also strips them).
          common_http_protocol_options:
            headers_with_underscores_action: REJECT_REQUEST
          request_headers_timeout: 10s
          # GET is a long-lived SSE stream and a POST may answer with one:
          # the route timeout is off (0s) and an idle stream lives 1h.
          stream_idle_timeout: 3600s
          # The whole request (a 1 MiB body at most) must arrive within 60s:
          # a slow upload is cut. The timer stops when the response starts,
          # so an SSE answer is not.
          request_timeout: 60s
          # HTTP/2 clients: bounded streams per connection and flow-control
          # windows (Envoy's edge best practice).
          http2_protocol_options:
            max_concurrent_streams: 100
            initial_stream_window_size: 65536
            initial_connection_window_size: 1048576
          access_log:
          - name: envoy.access_loggers.stdout
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
              log_format:
                # No Authorization header, no body: decision facts only.
                json_format:
                  start_time: "%START_TIME%"
                  request_id: "%REQ(X-REQUEST-ID)%"
                  method: "%REQ(:METHOD)%"
                  authority: "%REQ(:AUTHORITY)%"
                  path: "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"
                  response_code: "%RESPONSE_CODE%"
                  response_flags: "%RESPONSE_FLAGS%"
                  response_code_details: "%RESPONSE_CODE_DETAILS%"
                  duration_ms: "%DURATION%"
                  bytes_received: "%BYTES_RECEIVED%"
                  upstream_host: "%UPSTREAM_HOST%"
                  decision_id: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:decision_id)%"
                  decision: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:decision)%"
                  reason: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:reason)%"
                  rule_id: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:rule_id)%"
                  mcp_method: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:method)%"
                  mcp_server: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:server)%"
                  mcp_target: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:target)%"
                  principal: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:principal)%"
                  args_digest: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:args_digest)%"
                  request_digest: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:request_digest)%"
                  policy_version: "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:policy_version)%"
                  # The response seam's receipt (ext_proc receiving namespace
                  # mcp.receipt). A line with a decision_id, no outcome and a
                  # response flag is a call whose answer nobody observed.
                  outcome: "%DYNAMIC_METADATA(mcp.receipt:outcome)%"
                  is_error: "%DYNAMIC_METADATA(mcp.receipt:is_error)%"
                  rpc_error_code: "%DYNAMIC_METADATA(mcp.receipt:rpc_error_code)%"
                  upstream_failure: "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
          route_config:
            name: mcp
            virtual_hosts:
            - name: mcp
              domains: ["*"]
              # CORS for browser-based MCP clients: Envoy answers every
              # preflight (OPTIONS) itself, without a token. Origins:
              # sidecar.envoy.cors.allowOrigins (none by default).
              typed_per_filter_config:
                envoy.filters.http.cors:
                  "@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy
                  allow_origin_string_match: [{{ range $i, $o := .Values.sidecar.envoy.cors.allowOrigins }}{{ if $i }}, {{ end }}{ exact: {{ $o | quote }} }{{ end }}]
                  allow_methods: "GET, POST, DELETE, OPTIONS"
                  allow_headers: "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, dpop, idempotency-key, x-mcp-approval"
                  expose_headers: "mcp-session-id, www-authenticate"
                  max_age: "600"
                  forward_not_matching_preflights: false
                # The response seam is off for the whole virtual host (the
                # metadata route has no Check to follow); every route to the
                # MCP server below turns it on.
                envoy.filters.http.ext_proc:
                  "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                  disabled: true
              routes:
              # RFC 9728 protected resource metadata (MCP authorization): the
              # sign-in discovery a 401's WWW-Authenticate resource_metadata
              # points at, served by extauthz's HTTP port. Public by
              # definition, so ext_authz is off on this route only; extauthz
              # answers nothing but GET/HEAD of these paths here.
              - match: { path_separated_prefix: /.well-known/oauth-protected-resource }
                route:
                  cluster: extauthz_http
                  timeout: 5s
                typed_per_filter_config:
                  envoy.filters.http.ext_authz:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                    disabled: true
              # The response seam (ext_proc). Check sets x-mcp-method on every
              # allowed request, and x-mcp-cursor on a list carrying a sealed
              # cursor (a client's own copies are removed), and ext_authz's
              # clear_route_cache re-picks the route on them, so these routes
              # see what Check decided, never the client's word. All three
              # carry the same action, and each opens a side stream that fails
              # closed: every answer a client can read passes the processor
              # (issue 26: a server may answer a pending tools/list on the
              # stream of a ping or inside the array answering an initialize,
              # and the SDK clients route a response by its id, so no route
              # may pass an answer unread). No route sends the request
              # headers: Check's dynamic metadata carries all the processor
              # reads (the decision, the session hash, and on lists, batches
              # and GET the caller's claims), so a side stream costs no round
              # trip before the upstream (issue 31). Responses must reach the
              # processor uncompressed: accept-encoding is removed upstream on
              # every route (the processor refuses any content-encoding but
              # identity).
              #
              # A list (or batch) with a sealed params.cursor: the request
              # body, BUFFERED (Check already read it whole), so the processor
              # swaps the cursor for the upstream's own (--cursor-key-file);
              # the side stream opens there. The response as on every route.
              - match:
                  prefix: "/"
                  headers:
                  - name: x-mcp-method
                    string_match: { safe_regex: { regex: "tools/list|prompts/list|resources/list|resources/templates/list|tasks/list|batch" } }
                  - name: x-mcp-cursor
                    string_match: { exact: sealed }
                route:
                  cluster: mcp_server
                  timeout: 0s
                  host_rewrite_literal: "127.0.0.1:{{ int .Values.sidecar.mcpServer.port }}"
                  append_x_forwarded_host: true
                request_headers_to_remove: [accept-encoding]
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides:
                      processing_mode:
                        request_header_mode: SKIP
                        response_header_mode: SEND
                        request_body_mode: BUFFERED
                        response_body_mode: NONE
                        request_trailer_mode: SKIP
                        response_trailer_mode: SKIP
              # GET: the 2025 standalone SSE stream and Last-Event-ID replays,
              # which may carry any response; streamed to the processor from
              # the response headers.
              - match:
                  prefix: "/"
                  headers:
                  - name: ":method"
                    string_match: { exact: GET }
                route:
                  cluster: mcp_server
                  timeout: 0s
                  host_rewrite_literal: "127.0.0.1:{{ int .Values.sidecar.mcpServer.port }}"
                  append_x_forwarded_host: true
                request_headers_to_remove: [accept-encoding]
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides:
                      processing_mode:
                        request_header_mode: SKIP
                        response_header_mode: SEND
                        request_body_mode: NONE
                        response_body_mode: STREAMED
                        request_trailer_mode: SKIP
                        response_trailer_mode: SKIP
              # Everything else (lists without a cursor, initialize, ping,
              # tools/call, the task methods, notifications and responses,
              # DELETE, ...): the side stream opens at the response headers,
              # and the processor picks the response body mode there
              # (BUFFERED for JSON, STREAMED for SSE), so it holds the stream
              # to the transport rule: a POST's stream carries JSON-RPC
              # responses to that request's own ids only. One route for all
              # of them, as their side streams are the same: tools/call fails
              # closed too (a processor outage fails a call's answer, 503
              # before the headers, a reset after, though the upstream ran
              # the call).
              - match: { prefix: "/" }
                route:
                  cluster: mcp_server
                  timeout: 0s
                  # The MCP server, bound to 127.0.0.1, sees Host 127.0.0.1:PORT
                  # (what a direct loopback client sends): the official SDKs
                  # refuse any other Host there (DNS-rebinding protection).
                  # The client's Host arrives as X-Forwarded-Host. ext_authz
                  # decides on the client's Host: the rewrite happens after it.
                  host_rewrite_literal: "127.0.0.1:{{ int .Values.sidecar.mcpServer.port }}"
                  append_x_forwarded_host: true
                request_headers_to_remove: [accept-encoding]
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides:
                      processing_mode:
                        request_header_mode: SKIP
                        response_header_mode: SEND
                        request_body_mode: NONE
                        response_body_mode: NONE
                        request_trailer_mode: SKIP
                        response_trailer_mode: SKIP
          http_filters:
          - name: envoy.filters.http.cors
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              grpc_service:
                envoy_grpc: { cluster_name: ext_authz }
                timeout: {{ .Values.sidecar.envoy.checkTimeout }}
              # A gRPC error or timeout denies; the service never returns one
              # for a policy outcome.
              failure_mode_allow: false
              status_on_error: { code: ServiceUnavailable }
              # The JSON-RPC body goes to Check as exact bytes (raw_body). A body
              # over max_request_bytes (the chart sets extauthz --max-body-bytes
              # to the same value) gets 413 from Envoy and is never checked. Envoy sets
              # x-envoy-auth-partial-body (true: cut, false: whole) whenever it
              # buffered, even an empty body on GET or DELETE, which stays bodiless.
              with_request_body:
                max_request_bytes: {{ int .Values.maxRequestBytes }}
                allow_partial_message: false
                pack_as_bytes: true
              # Re-pick the route after Check: the response seam's routes
              # match on the x-mcp-method and x-mcp-cursor headers Check sets.
              clear_route_cache: true
              include_peer_certificate: false
              validate_mutations: true
              # Headers the service reads. x-mcp- is sent so that the service
              # can remove client-sent copies of the headers it sets.
              allowed_headers:
                patterns:
                - { exact: authorization }
                - { exact: dpop }                     # RFC 9449 DPoP proof of a cnf.jkt-bound token
                - { exact: content-type }
                - { exact: accept }
                - { exact: origin }
                - { exact: user-agent }
                - { exact: x-request-id }
                - { exact: traceparent }               # W3C Trace Context: the Check span continues the request's trace
                - { exact: tracestate }
                - { exact: b3 }                        # B3, single header (Zipkin)
                - { prefix: x-b3- }                    # B3, multiple headers
                - { exact: content-length }           # body_truncated: fewer bytes than announced
                - { exact: x-envoy-auth-partial-body } # set by Envoy when it buffered a body
                - { exact: content-encoding }  # only identity is decided
                - { exact: transfer-encoding } # only chunked is decided
                - { prefix: mcp-, ignore_case: true }
                - { prefix: x-mcp-, ignore_case: true }
                # Every name outside [a-z0-9-] (x_mcp_principal, mcp_method),
                # for the service to remove those that fold onto its own.
                - { safe_regex: { regex: "[a-z0-9-]*[^a-z0-9-].*" } }
                - { exact: idempotency-key }        # replay protection (Idempotency-Key)
                {{- with lower .Values.idempotency.header }}{{ if ne . "idempotency-key" }}
                - { exact: {{ . | quote }} }  # idempotency.header
                {{- end }}{{ end }}
          # The response seam: Envoy's external processing filter, after
          # ext_authz (it sees Check's dynamic metadata, and its per-route
          # config is merged on the route ext_authz re-picked) and before the
          # router. processing_mode below sends the response headers only
          # (the processor picks the body mode there); the virtual host
          # disables the filter and every route to the MCP server turns it
          # on with its own mode.
          # https://www.envoyproxy.io/docs/envoy/latest/api-v3/extensions/filters/http/ext_proc/v3/ext_proc.proto
          - name: envoy.filters.http.ext_proc
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor
              # The same gRPC port as Check, its own cluster: long-lived SSE
              # side streams do not eat the Checks' circuit-breaker budget.
              # No grpc_service.timeout: a side stream lives as long as its
              # response.
              grpc_service:
                envoy_grpc: { cluster_name: extauthz_proc }
              # Processor unreachable, failing or gone mid-stream: the
              # response fails (503 before the response started, a reset
              # after), never passes unfiltered. A per-message timeout is 504.
              # No route overrides it, tools/call's included.
              failure_mode_allow: false
              status_on_error: { code: ServiceUnavailable }
              processing_mode:
                request_header_mode: SKIP
                response_header_mode: SEND
                request_body_mode: NONE
                response_body_mode: NONE
                request_trailer_mode: SKIP
                response_trailer_mode: SKIP
              # The processor picks the response body mode when the response
              # headers arrive: BUFFERED for application/json, STREAMED for
              # text/event-stream. Nothing else (no BUFFERED_PARTIAL, whose
              # remainder passes unprocessed; no FULL_DUPLEX_STREAMED; no
              # NONE, which would opt a GET stream out). Every field is spelled
              # out: Envoy compares all but request_header_mode, so
              # request_body_mode too. The processor's override keeps the
              # route's request body mode: NONE, or BUFFERED on the route of
              # lists with a sealed cursor (it saw the request body). An override matching no
              # entry is ignored and the response body would stay NONE,
              # unfiltered: envoy.CheckInvariants requires an entry for each.
              allow_mode_override: true
              allowed_override_modes:
              - request_header_mode: SKIP
                response_header_mode: SEND
                request_body_mode: NONE
                response_body_mode: BUFFERED
                request_trailer_mode: SKIP
                response_trailer_mode: SKIP
              - request_header_mode: SKIP
                response_header_mode: SEND
                request_body_mode: NONE
                response_body_mode: STREAMED
                request_trailer_mode: SKIP
                response_trailer_mode: SKIP
              - request_header_mode: SKIP
                response_header_mode: SEND
                request_body_mode: BUFFERED
                response_body_mode: BUFFERED
                request_trailer_mode: SKIP
                response_trailer_mode: SKIP
              - request_header_mode: SKIP
                response_header_mode: SEND
                request_body_mode: BUFFERED
                response_body_mode: STREAMED
                request_trailer_mode: SKIP
                response_trailer_mode: SKIP
              # Per message awaiting an answer (idle SSE gaps do not count);
              # the processor may extend it once, up to 5s, for a huge list.
              message_timeout: 1s
              max_message_timeout: 5s
              metadata_options:
                # Check's decision (decision_id, method, principal, ...).
                forwarding_namespaces:
                  untyped: [envoy.filters.http.ext_authz]
                # The processor's receipt, printed by the access log.
                receiving_namespaces:
                  untyped: [mcp.receipt]
              # Headers the processor reads, all of the response (pseudo-
              # headers too: :status must be listed). No route sends it the
              # request headers, and the token never reaches it.
              forward_rules:
                allowed_headers:
                  patterns:
                  - { exact: ":status" }
                  - { exact: content-type }
                  - { exact: content-encoding }
                  - { exact: content-length }
              # The processor may set or remove only these headers; any other
              # mutation fails the response (500) instead of being dropped.
              mutation_rules:
                disallow_all: true
                allow_expression: { regex: "content-length|content-type|cache-control|x-mcp-[a-z0-9-]+" }
                disallow_is_error: true
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  # Readiness for the kubelet: 200 on /ready unless Envoy is draining,
  # /healthcheck/fail was called on the admin API, or the MCP server fails
  # its health check (cluster mcp_server_health), so a server bound to
  # 127.0.0.1 needs no probe the kubelet cannot run. GET /stats/prometheus
  # is the admin API's Prometheus endpoint, and the only admin path exposed.
  # https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/health_check_filter
  - name: health
    address:
      socket_address: { {{ include "mcp-extauthz.envoyListenAddress" . }}, port_value: {{ int .Values.sidecar.envoy.readinessPort }} }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: health
          route_config:
            name: health
            virtual_hosts:
            - name: health
              domains: ["*"]
              routes:
              - match:
                  path: /stats/prometheus
                  headers:
                  - name: ":method"
                    string_match: { exact: GET }
                route: { cluster: envoy_admin }
              - match: { prefix: "/" }
                direct_response: { status: 404 }
          http_filters:
          - name: envoy.filters.http.health_check
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck
              pass_through_mode: false
              headers:
              - name: ":path"
                string_match: { exact: /ready }
              cluster_min_healthy_percentages:
                mcp_server_health: { value: 100 }
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: ext_authz
    type: STATIC
    connect_timeout: 1s
    # gRPC needs HTTP/2 to the service.
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config:
          http2_protocol_options: {}
    # One Check per MCP request in flight: Envoy's default of 1024
    # concurrent requests would answer 503 (status_on_error) above it.
    circuit_breakers:
      thresholds:
      - max_connections: 10000
        max_pending_requests: 10000
        max_requests: 10000
    load_assignment:
      cluster_name: ext_authz
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.ports.grpc }} }
  # The same gRPC port again, for the response seam's side streams
  # (envoy.service.ext_proc.v3.ExternalProcessor): one per processed
  # response, some as long as an SSE stream.
  - name: extauthz_proc
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config:
          http2_protocol_options: {}
    circuit_breakers:
      thresholds:
      - max_connections: 10000
        max_pending_requests: 10000
        max_requests: 10000
    load_assignment:
      cluster_name: extauthz_proc
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.ports.grpc }} }
  # extauthz's HTTP port: only the metadata route uses it.
  - name: extauthz_http
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: extauthz_http
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.ports.http }} }
  - name: mcp_server
    type: STATIC
    connect_timeout: 1s
    # Every open SSE stream (GET, or a POST answered with a stream) holds a
    # request and, over HTTP/1.1, a connection for as long as it lives:
    # Envoy's default of 1024 would refuse new requests (503, overflow)
    # once 1024 streams are open.
    circuit_breakers:
      thresholds:
      - max_connections: 10000
        max_pending_requests: 10000
        max_requests: 10000
    load_assignment:
      cluster_name: mcp_server
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.sidecar.mcpServer.port }} }
  # The MCP server again, for readiness only (no route uses it): a TCP
  # health check every 5s; the health listener's /ready fails while it does.
  - name: mcp_server_health
    type: STATIC
    connect_timeout: 1s
    health_checks:
    - timeout: 1s
      interval: 5s
      unhealthy_threshold: 2
      healthy_threshold: 1
      tcp_health_check: {}
    load_assignment:
      cluster_name: mcp_server_health
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.sidecar.mcpServer.port }} }
  # The admin API, for GET /stats/prometheus on the health listener only.
  - name: envoy_admin
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: envoy_admin
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.sidecar.envoy.adminPort }} }
{{- end }}

{{/* Envoy's listener address: 0.0.0.0, or :: (IPv4-mapped too) with ipv6. */}}
{{- define "mcp-extauthz.envoyListenAddress" -}}
{{- if .Values.ipv6 }}address: "::", ipv4_compat: true{{ else }}address: 0.0.0.0{{ end }}
{{- end }}

{{/*
The overload manager (envoy/overload.yaml), passed with --config-yaml: the
heap limit is 3/4 of the Envoy container's memory limit (Mi or Gi).
*/}}
{{- define "mcp-extauthz.envoyOverload" -}}
{{- $mem := toString .Values.sidecar.envoy.resources.limits.memory }}
{{- $bytes := 0 }}
{{- if hasSuffix "Mi" $mem }}{{ $bytes = mul (int (trimSuffix "Mi" $mem)) 1048576 }}
{{- else if hasSuffix "Gi" $mem }}{{ $bytes = mul (int (trimSuffix "Gi" $mem)) 1073741824 }}
{{- else }}{{ fail (printf "sidecar.envoy.resources.limits.memory %q: give it in Mi or Gi (the Envoy heap limit is derived from it)" $mem) }}
{{- end }}
{{- $heap := div (mul $bytes 3) 4 }}
{{- $fixed := dict "name" "envoy.resource_monitors.fixed_heap" "typed_config" (dict "@type" "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig" "max_heap_size_bytes" $heap) }}
{{- $conns := dict "name" "envoy.resource_monitors.global_downstream_max_connections" "typed_config" (dict "@type" "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig" "max_active_downstream_connections" 20000) }}
{{- $shrink := dict "name" "envoy.overload_actions.shrink_heap" "triggers" (list (dict "name" "envoy.resource_monitors.fixed_heap" "threshold" (dict "value" 0.90))) }}
{{- $stop := dict "name" "envoy.overload_actions.stop_accepting_requests" "triggers" (list (dict "name" "envoy.resource_monitors.fixed_heap" "threshold" (dict "value" 0.95))) }}
{{- toJson (dict "overload_manager" (dict "refresh_interval" "0.25s" "resource_monitors" (list $fixed $conns) "actions" (list $shrink $stop))) }}
{{- end }}

{{/* Envoy --concurrency: the CPU limit rounded up, at least 1. */}}
{{- define "mcp-extauthz.envoyConcurrency" -}}
{{- $cpu := toString .Values.sidecar.envoy.resources.limits.cpu }}
{{- if hasSuffix "m" $cpu }}
{{- max 1 (div (add (int (trimSuffix "m" $cpu)) 999) 1000) }}
{{- else }}
{{- max 1 (int (ceil (float64 $cpu))) }}
{{- end }}
{{- end }}
