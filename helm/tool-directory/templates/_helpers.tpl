{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "td.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-wide name prefix; component names append "-gateway", "-catalog"... */}}
{{- define "td.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "td.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select a release's pods; add app.kubernetes.io/component per workload. */}}
{{- define "td.selectorLabels" -}}
app.kubernetes.io/name: {{ include "td.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "td.labels" -}}
helm.sh/chart: {{ include "td.chart" . }}
{{ include "td.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tool-directory
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one component: include "td.componentLabels" (dict "root" $ "component" "gateway") */}}
{{- define "td.componentLabels" -}}
{{ include "td.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "td.componentSelectorLabels" -}}
{{ include "td.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "td.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "td.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image of a service, tagged with the chart appVersion unless a tag is given. */}}
{{- define "td.image" -}}
{{- $image := index .root.Values .component "image" }}
{{- $repository := $image.repository }}
{{- with .root.Values.image.registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository }}
{{- end }}
{{- printf "%s:%s" $repository (default .root.Chart.AppVersion $image.tag) }}
{{- end }}

{{/* The Secret the services read INTERNAL_TOKEN, MONGODB_URI and REDIS_URL from. */}}
{{- define "td.secretName" -}}
{{- default (include "td.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* Key of a value in that Secret: include "td.secretKey" (dict "root" $ "key" "mongodbUri") */}}
{{- define "td.secretKey" -}}
{{- if .root.Values.secrets.existingSecret }}
{{- index .root.Values.secrets.keys .key }}
{{- else }}
{{- get (dict "mongodbUri" "MONGODB_URI" "redisUrl" "REDIS_URL" "internalToken" "INTERNAL_TOKEN") .key }}
{{- end }}
{{- end }}

{{/*
Everything that changes the Secret's content, hashed into the pod annotations so a change rolls
the pods. The generated INTERNAL_TOKEN is left out: it is random on first install and then
kept, so it would make every render differ. Changes inside an existingSecret are not seen
(restart the Deployments, or use a reloader).
*/}}
{{- define "td.secretChecksum" -}}
{{- dict "secrets" .Values.secrets "mongodb" .Values.mongodb "redis" .Values.redis | toJson | sha256sum }}
{{- end }}

{{/*
PUBLIC_URL, which the missing-key message and the portal name: gateway.config.publicUrl, else
the first Ingress host (https when a TLS entry covers it), else nothing (the gateway's default).
*/}}
{{- define "td.publicUrl" -}}
{{- if .Values.gateway.config.publicUrl }}
{{- .Values.gateway.config.publicUrl }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := first .Values.ingress.hosts }}
{{- $tls := false }}
{{- range .Values.ingress.tls }}
{{- if has $host (.hosts | default list) }}{{ $tls = true }}{{ end }}
{{- end }}
{{- printf "%s://%s" (ternary "https" "http" $tls) $host }}
{{- end }}
{{- end }}

{{/* The services' own shutdown grace after SHUTDOWN_DELAY_MS (fixed in the code). */}}
{{- define "td.appGraceSeconds" -}}25{{- end }}

{{- define "td.terminationGracePeriodSeconds" -}}
{{- add .Values.shutdown.preStopSleepSeconds .Values.shutdown.delaySeconds (include "td.appGraceSeconds" . | int) 5 }}
{{- end }}

{{- define "td.preStop" -}}
{{- $action := .Values.shutdown.preStopAction }}
{{- if eq $action "auto" }}
{{- $action = ternary "sleep" "exec" (semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- if eq $action "sleep" }}
preStop:
  sleep:
    seconds: {{ .Values.shutdown.preStopSleepSeconds }}
{{- else }}
preStop:
  exec:
    command: ["sleep", "{{ .Values.shutdown.preStopSleepSeconds }}"]
{{- end }}
{{- end }}

{{/* The hardened container securityContext every container of the chart gets. */}}
{{- define "td.containerSecurityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "td.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.fsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "td.imagePullSecrets" -}}
{{- range .Values.image.pullSecrets }}
- name: {{ . }}
{{- end }}
{{- end }}

{{/* Probes on the "http" port. */}}
{{- define "td.probes" -}}
{{- $p := .Values.probes }}
startupProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: {{ $p.startup.periodSeconds }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
{{- end }}

{{/* Environment from the Secret shared by both services. */}}
{{- define "td.secretEnv" -}}
{{- $secret := include "td.secretName" .root }}
- name: INTERNAL_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ include "td.secretKey" (dict "root" .root "key" "internalToken") }}
{{- if .root.Values.mongodb.enabled }}
- name: MONGODB_URI
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ include "td.secretKey" (dict "root" .root "key" "mongodbUri") }}
{{- end }}
{{- if and .redis .root.Values.redis.enabled }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ include "td.secretKey" (dict "root" .root "key" "redisUrl") }}
{{- end }}
{{- end }}

{{/* Default topology spread: zones and nodes, best effort, per component and ReplicaSet. */}}
{{- define "td.topologySpread" -}}
{{- $values := index .root.Values .component }}
{{- if $values.topologySpreadConstraints }}
{{- toYaml $values.topologySpreadConstraints }}
{{- else }}
{{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
- maxSkew: 1
  topologyKey: {{ . }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "td.componentSelectorLabels" (dict "root" $.root "component" $.component) | trim | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
{{- end }}
{{- end }}
{{- end }}

{{/* Checks on value combinations the schema cannot express. */}}
{{- define "td.validate" -}}
{{- if not .Values.mongodb.enabled }}
{{- if or (gt (int .Values.gateway.replicaCount) 1) .Values.gateway.autoscaling.enabled }}
{{- fail "Without MongoDB the gateway keeps API keys in its own DATA_DIR and must run as one replica: set mongodb.enabled=true (with mongodb.uri or secrets.existingSecret), or gateway.replicaCount=1 and gateway.autoscaling.enabled=false." }}
{{- end }}
{{- end }}
{{- if not .Values.secrets.existingSecret }}
{{- if and .Values.mongodb.enabled (not .Values.mongodb.uri) }}
{{- fail "mongodb.enabled needs the connection string: set mongodb.uri, or secrets.existingSecret naming a Secret with MONGODB_URI." }}
{{- end }}
{{- if and .Values.redis.enabled (not .Values.redis.url) }}
{{- fail "redis.enabled needs the connection URL: set redis.url, or secrets.existingSecret naming a Secret with REDIS_URL." }}
{{- end }}
{{- end }}
{{- if and .Values.tracing.enabled (not .Values.tracing.endpoint) }}
{{- fail "tracing.enabled needs tracing.endpoint (the OTLP collector, e.g. http://otel-collector.observability:4318)." }}
{{- end }}
{{- if and .Values.prometheusRule.enabled (not (.Files.Get "files/alerts.yml")) }}
{{- fail "prometheusRule.enabled but files/alerts.yml is missing from the chart." }}
{{- end }}
{{- if and .Values.grafanaDashboard.enabled (not (.Files.Glob "files/dashboards/*.json")) }}
{{- fail "grafanaDashboard.enabled but the chart has no files/dashboards/*.json." }}
{{- end }}
{{- end }}

{{/* ConfigMap entries both services read. */}}
{{- define "td.commonConfig" -}}
{{- $root := .root }}
LOG_LEVEL: {{ $root.Values.config.logLevel | quote }}
LOG_PRETTY: {{ $root.Values.config.logPretty | quote }}
SHUTDOWN_DELAY_MS: {{ mul $root.Values.shutdown.delaySeconds 1000 | quote }}
OTEL_SERVICE_NAME: {{ printf "tool-directory-%s" .component | quote }}
{{- if $root.Values.tracing.enabled }}
OTEL_TRACES_EXPORTER: "otlp"
OTEL_EXPORTER_OTLP_ENDPOINT: {{ $root.Values.tracing.endpoint | quote }}
OTEL_EXPORTER_OTLP_PROTOCOL: {{ $root.Values.tracing.protocol | quote }}
{{- else }}
OTEL_TRACES_EXPORTER: "none"
{{- end }}
{{- end }}
