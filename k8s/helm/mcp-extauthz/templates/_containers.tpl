{{/* The Envoy container (sidecar mode). dict: root, native. */}}
{{- define "mcp-extauthz.envoyContainer" -}}
{{- $native := .native }}
{{- $ := .root }}
{{- $envoyDrain := int $.Values.shutdown.envoyDrainSeconds }}
{{- with $.Values.sidecar.envoy -}}
- name: envoy
  image: {{ ternary (printf "%s@%s" .image.repository .image.digest) (printf "%s:%s" .image.repository (include "mcp-extauthz.tag" .image.tag)) (not (empty .image.digest)) | quote }}
  imagePullPolicy: {{ .image.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  command: [envoy]
  args:
    - --config-path
    - /etc/envoy/envoy.yaml
    # envoy/overload.yaml with the heap limit below this container's memory limit.
    - --config-yaml
    - {{ include "mcp-extauthz.envoyOverload" $ | quote }}
    - --log-level
    - {{ .logLevel }}
    # One worker per CPU of the limit: more would only contend for it.
    - --concurrency
    - {{ include "mcp-extauthz.envoyConcurrency" $ | quote }}
    # Shutdown: /drain_listeners?graceful (the extauthz preStop) lets
    # connections close for this long, all of them told at once.
    - --drain-time-s
    - {{ $envoyDrain | quote }}
    - --drain-strategy
    - immediate
    # One Envoy per container life: no hot restart, no shared memory.
    - --disable-hot-restart
  ports:
    - name: mcp
      containerPort: {{ int .port }}
      protocol: TCP
    - name: envoy-ready
      containerPort: {{ int .readinessPort }}
      protocol: TCP
  {{- if $native }}
  # Up before the MCP server starts; /ready would wait for the server.
  startupProbe:
    tcpSocket: {port: envoy-ready}
    periodSeconds: 1
    failureThreshold: 60
  {{- end }}
  # The admin API is on 127.0.0.1, which the kubelet cannot reach:
  # readiness uses the health_check listener (which also fails while the
  # MCP server fails Envoy's health check), liveness the MCP port.
  readinessProbe:
    httpGet: {path: /ready, port: envoy-ready}
    periodSeconds: 5
  livenessProbe:
    tcpSocket: {port: mcp}
    periodSeconds: 20
  {{- if not $native }}
  lifecycle:
    # Keep Envoy up while it drains (the extauthz preStop starts the drain).
    preStop:
      sleep: {seconds: {{ add $envoyDrain 1 }}}
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- include "mcp-extauthz.securityContext" (list .securityContext $.Values.securityContext) | nindent 4 }}
  volumeMounts:
    - name: envoy-config
      mountPath: /etc/envoy
      readOnly: true
{{- end }}
{{- end }}

{{/* The extauthz container. dict: root, any (the unspecified address), native. */}}
{{- define "mcp-extauthz.extauthzContainer" -}}
{{- $native := .native }}
{{- $any := .any }}
{{- $ := .root }}
{{- $sidecar := eq $.Values.mode "sidecar" }}
{{- $jwksSecret := include "mcp-extauthz.jwksSecret" $ }}
{{- $tls := $.Values.tls.secretName }}
{{- with $.Values -}}
- name: extauthz
  image: {{ include "mcp-extauthz.image" $ | quote }}
  imagePullPolicy: {{ .image.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  args:
    - serve
    {{- if not .idempotency.header }}
    # No idempotency header: an empty environment value would mean the default.
    - --idempotency-header=
    {{- end }}
  env:
    - name: EXTAUTHZ_GRPC_ADDR
      # Sidecar: only Envoy in the same Pod calls Check.
      value: {{ printf "%s:%d" (ternary "127.0.0.1" $any $sidecar) (int .ports.grpc) | quote }}
    - name: EXTAUTHZ_HTTP_ADDR
      value: {{ printf "%s:%d" $any (int .ports.http) | quote }}
    - name: EXTAUTHZ_POLICY
      value: /etc/mcp-extauthz/policy/policy.yaml
    - name: EXTAUTHZ_ISSUER
      value: {{ .auth.issuer | quote }}
    - name: EXTAUTHZ_AUDIENCE
      value: {{ join "," .auth.audiences | quote }}
    {{- with .auth.resourceMetadataURL }}
    - name: EXTAUTHZ_RESOURCE_METADATA_URL
      value: {{ . | quote }}
    {{- end }}
    {{- if $jwksSecret }}
    - name: EXTAUTHZ_JWKS_FILE
      value: {{ printf "/etc/mcp-extauthz/jwks/%s" .auth.jwks.key | quote }}
    {{- end }}
    {{- if .testOnly.allowPublishedTestKeys }}
    # TEST ONLY: the key sets may hold the keys this repository publishes.
    - name: EXTAUTHZ_ALLOW_TEST_KEYS
      value: "true"
    {{- end }}
    {{- if $tls }}
    - name: EXTAUTHZ_TLS_CERT_FILE
      value: /etc/mcp-extauthz/tls/tls.crt
    - name: EXTAUTHZ_TLS_KEY_FILE
      value: /etc/mcp-extauthz/tls/tls.key
    - name: EXTAUTHZ_CLIENT_CA_FILE
      value: /etc/mcp-extauthz/tls/ca.crt
    {{- end }}
    {{- with .serverId }}
    - name: EXTAUTHZ_SERVER_ID
      value: {{ . | quote }}
    {{- end }}
    {{- with .serverIdByPrincipal }}
    - name: EXTAUTHZ_SERVER_ID_BY_PRINCIPAL
      value: {{ include "mcp-extauthz.principalMap" . | quote }}
    {{- end }}
    - name: EXTAUTHZ_LOG_LEVEL
      value: {{ .logLevel | quote }}
    - name: EXTAUTHZ_MAX_BODY_BYTES
      value: {{ int .maxRequestBytes | quote }}
    - name: EXTAUTHZ_DRAIN_PERIOD
      value: {{ printf "%ds" (int .shutdown.drainPeriodSeconds) | quote }}
    - name: EXTAUTHZ_SHUTDOWN_TIMEOUT
      value: {{ printf "%ds" (int .shutdown.timeoutSeconds) | quote }}
    {{- with .stateStore }}
    {{- if .url }}
    - name: EXTAUTHZ_STATE_STORE
      value: {{ .url | quote }}
    {{- if .passwordSecret.name }}
    - name: EXTAUTHZ_STATE_STORE_PASSWORD_FILE
      value: /etc/mcp-extauthz/redis-password/password
    {{- end }}
    {{- if .sentinelPasswordSecret.name }}
    - name: EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD_FILE
      value: /etc/mcp-extauthz/redis-sentinel-password/password
    {{- end }}
    {{- if .tls.caSecret.name }}
    - name: EXTAUTHZ_STATE_STORE_TLS_CA_FILE
      value: /etc/mcp-extauthz/redis-ca/ca.crt
    {{- end }}
    {{- if .tls.clientCertSecret }}
    - name: EXTAUTHZ_STATE_STORE_TLS_CERT_FILE
      value: /etc/mcp-extauthz/redis-client-cert/tls.crt
    - name: EXTAUTHZ_STATE_STORE_TLS_KEY_FILE
      value: /etc/mcp-extauthz/redis-client-cert/tls.key
    {{- end }}
    {{- with .tls.serverName }}
    - name: EXTAUTHZ_STATE_STORE_TLS_SERVER_NAME
      value: {{ . | quote }}
    {{- end }}
    {{- if gt (int .waitReplicas) 0 }}
    - name: EXTAUTHZ_STATE_STORE_WAIT_REPLICAS
      value: {{ int .waitReplicas | quote }}
    - name: EXTAUTHZ_STATE_STORE_WAIT_TIMEOUT
      value: {{ .waitTimeout | quote }}
    {{- end }}
    {{- else }}
    # The memory store: each Pod keeps its own claims (one replica, or
    # stateStore.memoryPerReplicaAcknowledged).
    - name: EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK
      value: "true"
    {{- end }}
    {{- end }}
    {{- with .approvals }}
    {{- if .issuer }}
    - name: EXTAUTHZ_APPROVER_ISSUER
      value: {{ .issuer | quote }}
    {{- if .jwksSecret.name }}
    - name: EXTAUTHZ_APPROVER_JWKS_FILE
      value: /etc/mcp-extauthz/approver-jwks/jwks.json
    {{- end }}
    {{- with .url }}
    - name: EXTAUTHZ_APPROVAL_URL
      value: {{ . | quote }}
    {{- end }}
    - name: EXTAUTHZ_APPROVAL_MAX_LIFETIME
      value: {{ .maxLifetime | quote }}
    {{- end }}
    {{- end }}
    {{- with .idempotency }}
    {{- with .header }}
    - name: EXTAUTHZ_IDEMPOTENCY_HEADER
      value: {{ . | quote }}
    {{- end }}
    {{- with .meta }}
    - name: EXTAUTHZ_IDEMPOTENCY_META
      value: {{ . | quote }}
    {{- end }}
    - name: EXTAUTHZ_IDEMPOTENCY_TTL
      value: {{ .ttl | quote }}
    {{- end }}
    {{- if .dryRun }}
    # Dry run: every request is admitted; the decision is only logged.
    - name: EXTAUTHZ_DRY_RUN
      value: "true"
    {{- end }}
    - name: EXTAUTHZ_DENIAL_STATUS
      value: {{ .denialStatus | quote }}
    - name: EXTAUTHZ_CONCEAL_AS
      value: {{ .concealment.as | quote }}
    {{- if .concealment.jsonResponse }}
    - name: EXTAUTHZ_CONCEAL_JSON_RESPONSE
      value: "true"
    {{- end }}
    # The chart's Envoy runs the ext_proc response seam on list, call, task
    # and GET routes: Check enforces task ownership (task_not_owned).
    - name: EXTAUTHZ_RESPONSE_SEAM
      value: "true"
    {{- with .responseSeam }}
    {{- if .cursorKeySecret.name }}
    - name: EXTAUTHZ_CURSOR_KEY_FILE
      value: /etc/mcp-extauthz/cursor-key/cursor.key
    {{- end }}
    {{- if gt (int .listTtlMs) 0 }}
    - name: EXTAUTHZ_LIST_CACHE_TTL
      value: {{ printf "%dms" (int .listTtlMs) | quote }}
    {{- end }}
    {{- end }}
    {{- with .extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: grpc
      containerPort: {{ int .ports.grpc }}
      protocol: TCP
    - name: metrics
      containerPort: {{ int .ports.http }}
      protocol: TCP
  {{- if $sidecar }}
  # gRPC listens on 127.0.0.1, out of the kubelet's reach: the image's
  # own gRPC health client checks readiness from inside the container.
  readinessProbe:
    exec:
      command: [/extauthz, healthcheck, --addr, {{ printf "127.0.0.1:%d" (int .ports.grpc) | quote }}]
    periodSeconds: 10
    timeoutSeconds: 2
  {{- if $native }}
  startupProbe:
    exec:
      command: [/extauthz, healthcheck, --addr, {{ printf "127.0.0.1:%d" (int .ports.grpc) | quote }}]
    periodSeconds: 1
    timeoutSeconds: 2
    failureThreshold: 120
  {{- end }}
  {{- else if $tls }}
  # The kubelet's gRPC probe speaks no TLS: HTTP /readyz reports the same
  # readiness (policy compiled, keys available, not draining).
  readinessProbe:
    httpGet: {path: /readyz, port: metrics}
    periodSeconds: 5
  {{- else }}
  # Readiness: native gRPC probe (grpc.health.v1.Health, service ""),
  # SERVING once the policy compiled and the issuer's keys are known.
  # https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/#define-a-grpc-liveness-probe
  readinessProbe:
    grpc: {port: {{ int .ports.grpc }}}
    periodSeconds: 5
  {{- end }}
  # Liveness: HTTP /healthz (200 while the process runs) on the Pod
  # IP. Never gRPC health: it is NOT_SERVING while the identity
  # provider is down, and the kubelet would restart every replica.
  livenessProbe:
    httpGet: {path: /healthz, port: metrics}
    periodSeconds: 20
  {{- if and $sidecar (not $native) }}
  lifecycle:
    # First in the shutdown order: Envoy fails its readiness and drains
    # its listeners gracefully; the service keeps deciding meanwhile and
    # starts its own drain only once Envoy's is over.
    preStop:
      exec:
        command: [/extauthz, envoy-drain, --admin-addr, {{ printf "127.0.0.1:%d" (int .sidecar.envoy.adminPort) | quote }}, --drain-time, {{ printf "%ds" (int .shutdown.envoyDrainSeconds) | quote }}]
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- toYaml .securityContext | nindent 4 }}
  volumeMounts:
    - name: policy
      mountPath: /etc/mcp-extauthz/policy
      readOnly: true
    {{- if $jwksSecret }}
    - name: jwks
      mountPath: /etc/mcp-extauthz/jwks
      readOnly: true
    {{- end }}
    {{- if $tls }}
    - name: tls
      mountPath: /etc/mcp-extauthz/tls
      readOnly: true
    {{- end }}
    {{- with .stateStore }}
    {{- if and .url .passwordSecret.name }}
    - name: redis-password
      mountPath: /etc/mcp-extauthz/redis-password
      readOnly: true
    {{- end }}
    {{- if and .url .sentinelPasswordSecret.name }}
    - name: redis-sentinel-password
      mountPath: /etc/mcp-extauthz/redis-sentinel-password
      readOnly: true
    {{- end }}
    {{- if and .url .tls.caSecret.name }}
    - name: redis-ca
      mountPath: /etc/mcp-extauthz/redis-ca
      readOnly: true
    {{- end }}
    {{- if and .url .tls.clientCertSecret }}
    - name: redis-client-cert
      mountPath: /etc/mcp-extauthz/redis-client-cert
      readOnly: true
    {{- end }}
    {{- end }}
    {{- if and .approvals.issuer .approvals.jwksSecret.name }}
    - name: approver-jwks
      mountPath: /etc/mcp-extauthz/approver-jwks
      readOnly: true
    {{- end }}
    {{- if .responseSeam.cursorKeySecret.name }}
    - name: cursor-key
      mountPath: /etc/mcp-extauthz/cursor-key
      readOnly: true
    {{- end }}
{{- end }}
{{- end }}

{{/* serverIdByPrincipal as --server-id-by-principal's list: k=v,k=v (sorted). */}}
{{- define "mcp-extauthz.principalMap" -}}
{{- $out := list }}
{{- range $k := keys . | sortAlpha }}{{ $out = append $out (printf "%s=%s" $k (index $ $k)) }}{{ end }}
{{- join "," $out }}
{{- end }}
