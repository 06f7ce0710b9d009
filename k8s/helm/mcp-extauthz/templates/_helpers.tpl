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

{{- define "mcp-extauthz.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The JWKS Secret's name, or "" for OIDC discovery. */}}
{{- define "mcp-extauthz.jwksSecret" -}}
{{- if .Values.auth.jwks.existingSecret }}
{{- .Values.auth.jwks.existingSecret }}
{{- else if .Values.auth.jwks.inline }}
{{- printf "%s-jwks" (include "mcp-extauthz.fullname" .) }}
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
{{- $replicas := int .Values.replicaCount }}
{{- if not $url }}
{{- if and (gt $replicas 1) (not $s.memoryPerReplicaAcknowledged) }}
{{- fail (printf "stateStore: replicaCount is %d and stateStore.url is empty, so each Pod would keep its own memory store: an approval would be single use per Pod, an idempotency key (Idempotency-Key, on by default) bound to one request per Pod, and a restart forgets both. Set stateStore.url to a Redis every Pod shares, or replicaCount=1, or stateStore.memoryPerReplicaAcknowledged=true to accept per-Pod single use." $replicas) }}
{{- end }}
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
