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
