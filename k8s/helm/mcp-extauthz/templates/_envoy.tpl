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
      socket_address: { address: 0.0.0.0, port_value: {{ int .Values.sidecar.envoy.port }} }
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
                  allow_headers: "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name"
                  expose_headers: "mcp-session-id, www-authenticate"
                  max_age: "600"
                  forward_not_matching_preflights: false
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
              clear_route_cache: false
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
                - { exact: traceparent }
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
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  # Readiness for the kubelet: 200 on /ready unless Envoy is draining or
  # /healthcheck/fail was called on the admin API.
  # https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/health_check_filter
  - name: health
    address:
      socket_address: { address: 0.0.0.0, port_value: {{ int .Values.sidecar.envoy.readinessPort }} }
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
    load_assignment:
      cluster_name: ext_authz
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
    load_assignment:
      cluster_name: mcp_server
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: {{ int .Values.sidecar.mcpServer.port }} }
{{- end }}
