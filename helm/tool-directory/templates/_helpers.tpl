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

{{/* The Secret the chart creates (templates/secret.yaml) when any value below goes into it. */}}
{{- define "td.chartSecretName" -}}
{{- include "td.fullname" . }}
{{- end }}

{{/*
Whether a backend is configured: externalMongodb / externalRedis with a url, a host or an
existing Secret. Returns "true" or "" (templates test the string).
*/}}
{{- define "td.mongodb" -}}
{{- with .Values.externalMongodb }}{{ if or .url .host .existingSecret }}true{{ end }}{{ end }}
{{- end }}

{{- define "td.redis" -}}
{{- with .Values.externalRedis }}{{ if or .url .host .existingSecret .cluster.enabled .sentinel.enabled }}true{{ end }}{{ end }}
{{- end }}

{{/* Whether Redis is named by its nodes (a cluster, or sentinels) rather than one URL. */}}
{{- define "td.redisNodes" -}}
{{- with .Values.externalRedis }}{{ if or .cluster.enabled .sentinel.enabled }}true{{ end }}{{ end }}
{{- end }}

{{/*
Env entries naming a Redis Cluster or Sentinel: the nodes, and the credentials and TLS that
go with them (the password from the existing Secret or the chart's).
include "td.redisNodesEnv" $
*/}}
{{- define "td.redisNodesEnv" -}}
{{- $r := .Values.externalRedis }}
{{- if $r.cluster.enabled }}
- name: REDIS_CLUSTER_NODES
  value: {{ $r.cluster.nodes | quote }}
{{- else }}
- name: REDIS_SENTINELS
  value: {{ $r.sentinel.hosts | quote }}
- name: REDIS_SENTINEL_MASTER
  value: {{ $r.sentinel.masterSet | quote }}
{{- end }}
{{- with $r.username }}
- name: REDIS_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if or $r.existingSecret $r.password }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $r.existingSecret | default (include "td.chartSecretName" .) }}
      key: {{ ternary $r.existingSecretPasswordKey "REDIS_PASSWORD" (ne $r.existingSecret "") }}
{{- end }}
{{- if $r.tls }}
- name: REDIS_TLS
  value: "true"
{{- end }}
{{- end }}

{{/* Where the Redis CA certificate is mounted, when externalRedis.tlsCaSecret names one. */}}
{{- define "td.redisCaDir" -}}/etc/tool-directory/redis-ca{{- end }}

{{/*
The ConfigMap holding the secret-scanning providers' public keys (leak reports):
gateway.secretScanning.existingConfigMap, or the chart's own when publicKeys is set. Empty: no
leak reports, nothing mounted.
*/}}
{{- define "td.secretScanningConfigMap" -}}
{{- with .Values.gateway.secretScanning }}
{{- if .existingConfigMap }}{{ .existingConfigMap }}{{ else if .publicKeys }}{{ include "td.fullname" $ }}-secret-scanning{{ end }}
{{- end }}
{{- end }}

{{/*
Where that ConfigMap is mounted in the gateway pods, and the file SECRET_SCANNING_PUBLIC_KEYS
names in it: the same whichever ConfigMap holds the keys and under which key.
*/}}
{{- define "td.secretScanningDir" -}}/etc/tool-directory/secret-scanning{{- end }}
{{- define "td.secretScanningFile" -}}public-keys.json{{- end }}

{{/* URL-encodes a user name or password for the userinfo part of a URL (space as %20). */}}
{{- define "td.urlEncode" -}}
{{- urlquery . | replace "+" "%20" }}
{{- end }}

{{/*
Connection URL built from host/port: include "td.backendUrl" (dict "kind" "mongodb"|"redis"
"v" .Values.externalX "password" <literal password, or "$(VAR)" to let Kubernetes expand
the variable holding it>). The password is inserted as given: callers encode literals.
*/}}
{{- define "td.backendUrl" -}}
{{- $v := .v }}
{{- $auth := "" }}
{{- if .password }}
{{- $auth = printf "%s:%s@" (include "td.urlEncode" $v.username) .password }}
{{- else if $v.username }}
{{- $auth = printf "%s@" (include "td.urlEncode" $v.username) }}
{{- end }}
{{- if eq .kind "mongodb" }}
{{- printf "mongodb://%s%s:%d/" $auth $v.host (int $v.port) }}{{ with $v.options }}?{{ . }}{{ end }}
{{- else }}
{{- printf "%s://%s%s:%d/%d" (ternary "rediss" "redis" $v.tls) $auth $v.host (int $v.port) (int $v.database) }}
{{- end }}
{{- end }}

{{/*
Where a backend URL comes from, as a dict:
  secret: Secret name, key: key in it   (the URL is read from a Secret: chart's or existing;
                                          "chartSecret" names another Secret holding the
                                          chart's keys, as the seed Job's does)
  passwordSecret, passwordKey, url       (host set, password in an existing Secret: the URL
                                          is built around $(<VAR>_PASSWORD), see td.backendEnv)
include "td.backendSource" (dict "root" $ "kind" "mongodb"|"redis" ["chartSecret" name]) | fromYaml
*/}}
{{- define "td.backendSource" -}}
{{- $v := ternary .root.Values.externalMongodb .root.Values.externalRedis (eq .kind "mongodb") }}
{{- $chartKey := ternary "MONGODB_URI" "REDIS_URL" (eq .kind "mongodb") }}
{{- if and $v.host $v.existingSecret }}
passwordSecret: {{ $v.existingSecret | quote }}
passwordKey: {{ $v.existingSecretPasswordKey | quote }}
{{- else if $v.existingSecret }}
secret: {{ $v.existingSecret | quote }}
key: {{ $v.existingSecretUrlKey | quote }}
{{- else }}
secret: {{ .chartSecret | default (include "td.chartSecretName" .root) | quote }}
key: {{ $chartKey }}
{{- end }}
{{- end }}

{{/*
Env entries giving one backend's URL to a container: MONGODB_URI or REDIS_URL.
include "td.backendEnv" (dict "root" $ "kind" "mongodb"|"redis" ["chartSecret" name])
*/}}
{{- define "td.backendEnv" -}}
{{- $source := include "td.backendSource" . | fromYaml }}
{{- $var := ternary "MONGODB" "REDIS" (eq .kind "mongodb") }}
{{- $v := ternary .root.Values.externalMongodb .root.Values.externalRedis (eq .kind "mongodb") }}
{{- if $source.passwordSecret }}
{{- /* Kubernetes expands $(VAR) from variables defined earlier in the list. */}}
- name: {{ $var }}_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $source.passwordSecret }}
      key: {{ $source.passwordKey }}
- name: {{ $var }}_{{ ternary "URI" "URL" (eq .kind "mongodb") }}
  value: {{ include "td.backendUrl" (dict "kind" .kind "v" $v "password" (printf "$(%s_PASSWORD)" $var)) | quote }}
{{- else }}
- name: {{ $var }}_{{ ternary "URI" "URL" (eq .kind "mongodb") }}
  valueFrom:
    secretKeyRef:
      name: {{ $source.secret }}
      key: {{ $source.key }}
{{- end }}
{{- end }}

{{/*
The data of the chart's Secret: every credential given as a value. Empty when all of them
come from existing Secrets (then no Secret is rendered).
*/}}
{{- define "td.chartSecretData" -}}
{{- $v := .Values }}
{{- if $v.secrets.internalToken }}
INTERNAL_TOKEN: {{ $v.secrets.internalToken | b64enc | quote }}
{{- end }}
{{- if $v.catalog.adminToken }}
ADMIN_TOKEN: {{ $v.catalog.adminToken | b64enc | quote }}
{{- end }}
{{- include "td.mongodbSecretData" . }}
{{- with $v.externalRedis }}
{{- if .url }}
REDIS_URL: {{ .url | b64enc | quote }}
{{- else if and (include "td.redisNodes" $) .password }}
REDIS_PASSWORD: {{ .password | b64enc | quote }}
{{- else if and .host (not .existingSecret) }}
REDIS_URL: {{ include "td.backendUrl" (dict "kind" "redis" "v" . "password" (include "td.urlEncode" .password)) | b64enc | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
MONGODB_URI as Secret data, when the MongoDB URL (or its password) is given as a value; empty
when it comes from an existing Secret. In the chart's Secret, and in the seed Job's own.
*/}}
{{- define "td.mongodbSecretData" -}}
{{- with .Values.externalMongodb }}
{{- if .url }}
MONGODB_URI: {{ .url | b64enc | quote }}
{{- else if and .host (not .existingSecret) }}
MONGODB_URI: {{ include "td.backendUrl" (dict "kind" "mongodb" "v" . "password" (include "td.urlEncode" .password)) | b64enc | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Hash of the chart Secret's data, in the pod annotations: any change of its content rolls the
pods. Existing Secrets cannot be seen at render time: see reloader.enabled.
*/}}
{{- define "td.secretChecksum" -}}
{{- include "td.chartSecretData" . | sha256sum }}
{{- end }}

{{/* The existing Secrets the pods read, for Stakater Reloader (comma-separated). */}}
{{- define "td.existingSecrets" -}}
{{- $names := list }}
{{- range list .Values.secrets.existingSecret .Values.externalMongodb.existingSecret .Values.externalRedis.existingSecret .Values.externalRedis.tlsCaSecret }}
{{- if . }}{{ $names = append $names . }}{{ end }}
{{- end }}
{{- $names | uniq | join "," }}
{{- end }}

{{/*
PUBLIC_URL, which the missing-key message and the portal name: gateway.config.publicUrl, else
the first Ingress host (https when a TLS entry covers it), else the first HTTPRoute hostname
(https: Gateway listeners facing clients terminate TLS), else nothing (the gateway's default).
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
{{- else if and .Values.httpRoute.enabled .Values.httpRoute.hostnames }}
{{- $host := first .Values.httpRoute.hostnames }}
{{- if not (hasPrefix "*." $host) }}{{ printf "https://%s" $host }}{{ end }}
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

{{/*
Environment from Secrets: include "td.secretEnv" (dict "root" $ "admin" <bool>). Every
container gets INTERNAL_TOKEN and the configured backends; ADMIN_TOKEN only where "admin".
*/}}
{{- define "td.secretEnv" -}}
{{- $root := .root }}
{{- $secrets := $root.Values.secrets }}
- name: INTERNAL_TOKEN
  valueFrom:
    secretKeyRef:
      {{- if $secrets.internalToken }}
      name: {{ include "td.chartSecretName" $root }}
      key: INTERNAL_TOKEN
      {{- else }}
      name: {{ $secrets.existingSecret }}
      key: {{ $secrets.keys.internalToken }}
      {{- end }}
{{- if .admin }}
{{- if $root.Values.catalog.adminToken }}
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "td.chartSecretName" $root }}
      key: ADMIN_TOKEN
{{- else if $secrets.existingSecret }}
{{- /* Optional: without the key the variable is unset and the admin endpoints stay off. */}}
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secrets.existingSecret }}
      key: {{ $secrets.keys.adminToken }}
      optional: true
{{- end }}
{{- end }}
{{- if include "td.mongodb" $root }}
{{- include "td.backendEnv" (dict "root" $root "kind" "mongodb") | trim | nindent 0 }}
{{- end }}
{{- if include "td.redisNodes" $root }}
{{- include "td.redisNodesEnv" $root | trim | nindent 0 }}
{{- else if include "td.redis" $root }}
{{- include "td.backendEnv" (dict "root" $root "kind" "redis") | trim | nindent 0 }}
{{- end }}
{{- with $root.Values.externalRedis }}
{{- if and (include "td.redis" $root) .tlsCaSecret }}
- name: REDIS_TLS_CA_FILE
  value: {{ printf "%s/%s" (include "td.redisCaDir" $root) .tlsCaSecretKey | quote }}
{{- end }}
{{- if and (include "td.redis" $root) .tlsServerName }}
- name: REDIS_TLS_SERVERNAME
  value: {{ .tlsServerName | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Default topology spread: zones and nodes, best effort, per component and ReplicaSet.
include "td.topologySpread" (dict "root" $ "component" "gateway" "values" <workload values>)
*/}}
{{- define "td.topologySpread" -}}
{{- if .values.topologySpreadConstraints }}
{{- toYaml .values.topologySpreadConstraints }}
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
{{- $v := .Values }}
{{- $mongodb := include "td.mongodb" . }}
{{- $redis := include "td.redis" . }}
{{- with $v.secrets }}
{{- if and .internalToken .existingSecret }}
{{- fail "Set secrets.internalToken or secrets.existingSecret, not both." }}
{{- else if not (or .internalToken .existingSecret) }}
{{- fail "INTERNAL_TOKEN is missing: set secrets.internalToken (e.g. --set secrets.internalToken=$(openssl rand -hex 32)) or secrets.existingSecret naming a Secret with the key INTERNAL_TOKEN. The chart does not generate one, so that every render (Argo CD, Flux, helm template) gives the same manifests." }}
{{- end }}
{{- end }}
{{- with $v.gateway.secretScanning }}
{{- if and .publicKeys .existingConfigMap }}
{{- fail "Set gateway.secretScanning.publicKeys or gateway.secretScanning.existingConfigMap, not both." }}
{{- end }}
{{- if .publicKeys }}
{{- /* The gateway refuses to start on a keys file it cannot use: say so at render time. */}}
{{- $format := "the JSON document GitHub publishes: {\"public_keys\": [{\"key_identifier\": \"…\", \"key\": \"-----BEGIN PUBLIC KEY-----…\", \"is_current\": true}]}" }}
{{- $doc := fromJson .publicKeys }}
{{- if hasKey $doc "Error" }}
{{- fail (printf "gateway.secretScanning.publicKeys is not a JSON object (%s): give %s." (get $doc "Error") $format) }}
{{- end }}
{{- $keys := get $doc "public_keys" }}
{{- if not (and (kindIs "slice" $keys) $keys) }}
{{- fail (printf "gateway.secretScanning.publicKeys holds no \"public_keys\" list: give %s." $format) }}
{{- end }}
{{- range $keys }}
{{- if not (and (kindIs "map" .) (kindIs "string" (index . "key_identifier")) (kindIs "string" (index . "key"))) }}
{{- fail (printf "An entry of gateway.secretScanning.publicKeys lacks key_identifier or key: give %s." $format) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $v.catalog.adminToken $v.secrets.existingSecret }}
{{- fail "catalog.adminToken is set but secrets.existingSecret is used: put ADMIN_TOKEN into that Secret (key secrets.keys.adminToken) instead." }}
{{- end }}
{{- range $name, $b := dict "externalMongodb" $v.externalMongodb "externalRedis" $v.externalRedis }}
{{- if and $b.url $b.host }}
{{- fail (printf "Set %s.url or %s.host, not both." $name $name) }}
{{- end }}
{{- if and $b.url $b.existingSecret }}
{{- fail (printf "Set %s.url or %s.existingSecret (with the URL under %s.existingSecretUrlKey), not both." $name $name $name) }}
{{- end }}
{{- if and $b.password $b.existingSecret }}
{{- fail (printf "Set %s.password or %s.existingSecret (with the password under %s.existingSecretPasswordKey), not both." $name $name $name) }}
{{- end }}
{{- if and (or $b.password $b.username) (not $b.host) (not (and (eq $name "externalRedis") (include "td.redisNodes" $))) }}
{{- fail (printf "%s.username and %s.password go with %s.host; with url or existingSecret the credentials are part of the URL." $name $name $name) }}
{{- end }}
{{- end }}
{{- with $v.externalRedis }}
{{- if and .cluster.enabled .sentinel.enabled }}
{{- fail "Set externalRedis.cluster.enabled or externalRedis.sentinel.enabled, not both: they name different kinds of Redis." }}
{{- end }}
{{- if and (include "td.redisNodes" $) (or .url .host) }}
{{- fail "externalRedis.cluster and externalRedis.sentinel name Redis by its nodes: unset externalRedis.url and externalRedis.host (the password may stay in externalRedis.existingSecret, under existingSecretPasswordKey)." }}
{{- end }}
{{- if and .cluster.enabled (not .cluster.nodes) }}
{{- fail "externalRedis.cluster.enabled needs externalRedis.cluster.nodes: some of the cluster's nodes as host:port, comma-separated (a configuration endpoint is enough)." }}
{{- end }}
{{- if and .cluster.enabled (ne (int .database) 0) }}
{{- fail "externalRedis.database must be 0 with externalRedis.cluster.enabled: a Redis Cluster has database 0 only." }}
{{- end }}
{{- if and .sentinel.enabled (not .sentinel.hosts) }}
{{- fail "externalRedis.sentinel.enabled needs externalRedis.sentinel.hosts: the sentinels as host:port, comma-separated." }}
{{- end }}
{{- if and .tlsCaSecret (not (include "td.redis" $)) }}
{{- fail "externalRedis.tlsCaSecret is set but no Redis is: configure externalRedis." }}
{{- end }}
{{- end }}
{{- with $v.externalMongodb }}
{{- if and .host (or .password .existingSecret) (not .username) }}
{{- fail "externalMongodb.host with a password needs externalMongodb.username." }}
{{- end }}
{{- end }}
{{- /* The embedded store is a file on one pod's ReadWriteOnce volume. */}}
{{- if not $mongodb }}
{{- range $component, $what := dict "gateway" "API keys in DATA_DIR/keys.db" "catalog" "operator changes, webhook subscriptions and deliveries in DATA_DIR/catalog.db" }}
{{- $w := index $v $component }}
{{- if or (gt (int $w.replicaCount) 1) $w.autoscaling.enabled }}
{{- fail (printf "Without MongoDB the %s keeps its %s on a ReadWriteOnce volume and must run as one replica: set %s.replicaCount=1 and %s.autoscaling.enabled=false, or configure externalMongodb." $component $what $component $component) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* Quotas are shared by every gateway replica, through Redis (docs/api.md#quotas-and-rate-limit-headers). */}}
{{- if not $redis }}
{{- $gw := $v.gateway }}
{{- if or (gt (int $gw.replicaCount) 1) (and $gw.autoscaling.enabled (gt (int $gw.autoscaling.maxReplicas) 1)) }}
{{- fail "Without Redis every gateway replica would count quotas on its own, so a key could get several times its daily quota: configure externalRedis, or keep one gateway replica (gateway.replicaCount=1, and gateway.autoscaling.maxReplicas=1 or autoscaling off)." }}
{{- end }}
{{- end }}
{{- range $component := list "gateway" "catalog" }}
{{- with (index $v $component).autoscaling }}
{{- if and .enabled (gt (int .minReplicas) (int .maxReplicas)) }}
{{- fail (printf "%s.autoscaling.minReplicas (%d) is above maxReplicas (%d)." $component (int .minReplicas) (int .maxReplicas)) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $v.webhooks.worker.enabled (not (and $mongodb $redis)) }}
{{- fail "webhooks.worker.enabled needs externalMongodb and externalRedis: a separate worker shares the subscriptions and the delivery queue with the catalog, which the embedded store keeps on the catalog's own volume." }}
{{- end }}
{{- if and $v.tracing.enabled (not $v.tracing.endpoint) }}
{{- fail "tracing.enabled needs tracing.endpoint (the OTLP collector, e.g. http://otel-collector.observability:4318)." }}
{{- end }}
{{- if and $v.prometheusRule.enabled (not $v.docsBaseUrl) }}
{{- fail "prometheusRule.enabled needs docsBaseUrl: the URL where your copy of the project's docs/ directory is published (e.g. your Git host's view of docs/ in your repository, or an internal docs site), so that every alert's runbook_url opens its runbook." }}
{{- end }}
{{- if and $v.httpRoute.enabled (not $v.httpRoute.parentRefs) }}
{{- fail "httpRoute.enabled needs httpRoute.parentRefs: the Gateway (name, namespace, optionally sectionName) the route attaches to." }}
{{- end }}
{{- if and $v.prometheusRule.enabled (not (.Files.Get "files/alerts.yml")) }}
{{- fail "prometheusRule.enabled but files/alerts.yml is missing from the chart." }}
{{- end }}
{{- if and $v.grafanaDashboard.enabled (not (.Files.Glob "files/dashboards/*.json")) }}
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
OTEL_TRACES_SAMPLER: "parentbased_traceidratio"
OTEL_TRACES_SAMPLER_ARG: {{ $root.Values.tracing.sampleRatio | toString | quote }}
{{- else }}
OTEL_TRACES_EXPORTER: "none"
{{- end }}
{{- end }}
