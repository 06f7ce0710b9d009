{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "mcp-extauthz.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, unless it lacks the chart name. */}}
{{- define "mcp-extauthz.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-extauthz.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-extauthz.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-extauthz.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mcp-extauthz.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "mcp-extauthz.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-extauthz.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image tag as a string: `--set image.tag=1` gives an integer. */}}
{{- define "mcp-extauthz.tag" -}}
{{- if kindIs "float64" . }}{{ int64 . }}{{ else }}{{ toString . }}{{ end }}
{{- end }}

{{- define "mcp-extauthz.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "mcp-extauthz.tag" (default .Chart.AppVersion .Values.image.tag)) }}
{{- end }}

{{/* Fails the render naming every value the release still needs, at once,
each with why. Returns nothing. */}}
{{- define "mcp-extauthz.missingValues" -}}
{{- $missing := list }}
{{- if eq .Values.mode "sidecar" }}
{{- if not .Values.serverId }}
{{- $missing = append $missing "serverId: the Pod serves one MCP server and Envoy's route names none (context extension mcp_server), so without --server-id every request is denied (unknown_server); set it to the server's id in your policy" }}
{{- end }}
{{- with .Values.sidecar.mcpServer.image }}
{{- if not .repository }}
{{- $missing = append $missing "sidecar.mcpServer.image.repository: your MCP server's image" }}
{{- end }}
{{- if not (include "mcp-extauthz.tag" .tag) }}
{{- $missing = append $missing "sidecar.mcpServer.image.tag: its tag (latest is refused)" }}
{{- end }}
{{- end }}
{{- end }}
{{- $replicas := int .Values.replicaCount }}
{{- if and (gt $replicas 1) (not .Values.stateStore.url) (not .Values.stateStore.memoryPerReplicaAcknowledged) }}
{{- $missing = append $missing (printf "stateStore.url: replicaCount is %d and stateStore.url is empty, so each Pod would keep its own memory store: an approval would be single use per Pod, an idempotency key (Idempotency-Key, on by default) bound to one request per Pod, a task bound on one Pod unknown to the others (task_not_owned), and a restart forgets them all. Set stateStore.url to a Redis every Pod shares, or replicaCount=1, or stateStore.memoryPerReplicaAcknowledged=true to accept per-Pod state" $replicas) }}
{{- end }}
{{- if $missing }}
{{- fail (printf "missing values (%d):\n  - %s" (len $missing) (join "\n  - " $missing)) }}
{{- end }}
{{- end }}

{{/* The JWKS Secret's name, or "" for OIDC discovery. */}}
{{- define "mcp-extauthz.jwksSecret" -}}
{{- if .Values.auth.jwks.existingSecret }}
{{- .Values.auth.jwks.existingSecret }}
{{- else if .Values.auth.jwks.inline }}
{{- printf "%s-jwks" (include "mcp-extauthz.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The keys this repository publishes for demos and tests
(examples/TEST-ONLY-*.jwk.json): one line each, the hex RFC 7638 SHA-256
thumbprint of the public key and the file of its private half. Anyone can
sign with them. k8s/chart_test.go keeps this list equal to
internal/testkeys/published.txt, the one serve refuses.
*/}}
{{- define "mcp-extauthz.publishedTestKeys" -}}
846e7334b02cd9470b9c460074edba977ab91c24c0ce79d31f0d4bed708582fe examples/TEST-ONLY-signing-key.jwk.json
5d0305197278ccab1672c07e143fffaea9713f6e47e5a55f72dd1a4d866cdbec examples/TEST-ONLY-approver-key.jwk.json
f45245c86304c7dad8e1f3cde34707ea9099a678a69c5ab8189c8c64a6089bc0 examples/TEST-ONLY-decision-key.jwk.json
{{- end }}

{{/*
Fails the render when a key of the JWKS auth.jwks.inline is a published test
key (compared by RFC 7638 thumbprint: the required public members in
lexicographic order, no whitespace, SHA-256), unless
testOnly.allowPublishedTestKeys. A Secret the chart does not render
(auth.jwks.existingSecret) is vetted by the service at start-up.
*/}}
{{- define "mcp-extauthz.refusePublishedTestKeys" -}}
{{- if not .Values.testOnly.allowPublishedTestKeys }}
{{- $set := fromJson .Values.auth.jwks.inline }}
{{- range $k := (get $set "keys" | default list) }}
{{- $canon := "" }}
{{- if eq (get $k "kty") "RSA" }}{{ $canon = printf `{"e":"%s","kty":"RSA","n":"%s"}` (get $k "e") (get $k "n") }}
{{- else if eq (get $k "kty") "EC" }}{{ $canon = printf `{"crv":"%s","kty":"EC","x":"%s","y":"%s"}` (get $k "crv") (get $k "x") (get $k "y") }}
{{- else if eq (get $k "kty") "OKP" }}{{ $canon = printf `{"crv":"%s","kty":"OKP","x":"%s"}` (get $k "crv") (get $k "x") }}
{{- end }}
{{- if $canon }}
{{- $tp := sha256sum $canon }}
{{- range $line := splitList "\n" (include "mcp-extauthz.publishedTestKeys" $) }}
{{- $known := splitList " " $line }}
{{- if eq (first $known) $tp }}
{{- fail (printf "auth.jwks.inline holds the published test key %q (RFC 7638 thumbprint %s; its private half is %s in the mcp-extauthz repository, so anyone can sign tokens with it): set your identity provider's keys, or testOnly.allowPublishedTestKeys=true for a demo or a test" (get $k "kid") $tp (last $known)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A container securityContext: the chart-wide hardening merged under an override. */}}
{{- define "mcp-extauthz.securityContext" -}}
{{- $override := index . 0 }}
{{- $base := index . 1 }}
{{- toYaml (mergeOverwrite (deepCopy $base) $override) }}
{{- end }}

{{/* Fails the render for a state store that cannot hold single use: the
memory store behind more than one Pod without acknowledgment, or settings
that serve refuses. Returns nothing. */}}
{{- define "mcp-extauthz.stateStoreChecks" -}}
{{- $s := .Values.stateStore }}
{{- $url := $s.url | default "" }}
{{- if not $url }}
{{- /* several replicas on the memory store: mcp-extauthz.missingValues */}}
{{- if or $s.passwordSecret.name $s.sentinelPasswordSecret.name $s.tls.caSecret.name $s.tls.clientCertSecret $s.tls.serverName (gt (int $s.waitReplicas) 0) }}
{{- fail "stateStore: passwordSecret, sentinelPasswordSecret, tls and waitReplicas are Redis settings: set stateStore.url" }}
{{- end }}
{{- else }}
{{- if $s.memoryPerReplicaAcknowledged }}
{{- fail "stateStore.memoryPerReplicaAcknowledged is for the memory store (no url); a Redis store is shared by every Pod" }}
{{- end }}
{{- if and (or $s.tls.caSecret.name $s.tls.clientCertSecret $s.tls.serverName) (not (hasPrefix "rediss" $url)) }}
{{- fail "stateStore.tls needs a TLS URL: rediss://, rediss-sentinel:// or rediss-cluster://" }}
{{- end }}
{{- if and $s.sentinelPasswordSecret.name (not (contains "-sentinel://" $url)) }}
{{- fail "stateStore.sentinelPasswordSecret needs a redis-sentinel:// or rediss-sentinel:// url" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Fails the render for feature values serve would refuse or ignore.
Returns nothing. */}}
{{- define "mcp-extauthz.featureChecks" -}}
{{- with .Values.approvals }}
{{- if and (not .issuer) (or .jwksSecret.name .url) }}
{{- fail "approvals: jwksSecret and url are settings of approvals: set approvals.issuer (the approver's iss) to turn them on" }}
{{- end }}
{{- end }}
{{- end }}
