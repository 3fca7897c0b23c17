{{/*
Whether a service keeps state in its own DATA_DIR: the gateway and the catalog without MongoDB
(the embedded store). Returns "true" or "".
*/}}
{{- define "td.stateful" -}}
{{- if and (has .component (list "gateway" "catalog")) (not (include "td.mongodb" .root)) }}true{{ end }}
{{- end }}

{{/* The claim holding a stateful service's DATA_DIR: its existingClaim or the chart's. */}}
{{- define "td.claimName" -}}
{{- $v := index .root.Values .component }}
{{- default (printf "%s-%s-data" (include "td.fullname" .root) .component) $v.persistence.existingClaim }}
{{- end }}

{{/*
Deployment of one workload: include "td.deployment" (dict "root" $ "component" "gateway").
All of them run the same way; they differ in image, ports, config, state, (catalog only)
ADMIN_TOKEN and WEBHOOK_WORKER, and (gateway only) the secret-scanning keys' ConfigMap.
*/}}
{{- define "td.deployment" -}}
{{- $root := .root }}
{{- $component := .component }}
{{- $isWorker := eq $component "webhook-worker" }}
{{- $v := ternary $root.Values.webhooks.worker (index $root.Values $component) $isWorker }}
{{- /* Image, ports and ConfigMap: the worker is the catalog's image with its configuration. */}}
{{- $service := ternary "catalog" $component $isWorker }}
{{- $sv := index $root.Values $service }}
{{- $fullname := include "td.fullname" $root }}
{{- $stateful := include "td.stateful" . }}
{{- $secretScanning := ternary (include "td.secretScanningConfigMap" $root) "" (eq $component "gateway") }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
  {{- if $root.Values.reloader.enabled }}
  {{- with include "td.existingSecrets" $root }}
  annotations:
    # Stakater Reloader rolls the pods when one of these existing Secrets changes.
    secret.reloader.stakater.com/reload: {{ . | quote }}
  {{- end }}
  {{- end }}
spec:
  {{- if not (and $v.autoscaling $v.autoscaling.enabled) }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "td.componentSelectorLabels" . | trim | nindent 6 }}
  strategy:
    {{- if $stateful }}
    # A ReadWriteOnce claim cannot be mounted by the old and the new pod at once.
    type: Recreate
    {{- else }}
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 25%
    {{- end }}
  template:
    metadata:
      labels:
        {{- include "td.componentLabels" . | trim | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include (print $root.Template.BasePath "/" $service "/configmap.yaml") $root | sha256sum }}
        checksum/secret: {{ include "td.secretChecksum" $root }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "td.serviceAccountName" $root }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      {{- with $root.Values.image.pullSecrets }}
      imagePullSecrets:
        {{- include "td.imagePullSecrets" $root | trim | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "td.podSecurityContext" $root | trim | nindent 8 }}
      terminationGracePeriodSeconds: {{ include "td.terminationGracePeriodSeconds" $root }}
      topologySpreadConstraints:
        {{- include "td.topologySpread" (dict "root" $root "component" $component "values" $v) | trim | nindent 8 }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $component }}
          image: {{ include "td.image" (dict "root" $root "component" $service) | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ $sv.port }}
              protocol: TCP
            - name: metrics
              containerPort: {{ $sv.metricsPort }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ $fullname }}-{{ $service }}
          env:
            {{- include "td.secretEnv" (dict "root" $root "admin" (eq $component "catalog")) | trim | nindent 12 }}
            {{- if eq $service "catalog" }}
            # Who delivers webhooks: the catalog itself (on), or the separate worker (off / only).
            - name: WEBHOOK_WORKER
              value: {{ ternary "only" (ternary "off" "on" $root.Values.webhooks.worker.enabled) $isWorker | quote }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- include "td.probes" $root | trim | nindent 10 }}
          {{- if gt (int $root.Values.shutdown.preStopSleepSeconds) 0 }}
          lifecycle:
            {{- include "td.preStop" $root | trim | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- include "td.containerSecurityContext" $root | trim | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: data
              mountPath: /data
            {{- if and (include "td.redis" $root) $root.Values.externalRedis.tlsCaSecret }}
            - name: redis-ca
              mountPath: {{ include "td.redisCaDir" $root }}
              readOnly: true
            {{- end }}
            {{- if $secretScanning }}
            # The whole directory, never a subPath: only then does the kubelet update the file
            # when the ConfigMap changes.
            - name: secret-scanning
              mountPath: {{ include "td.secretScanningDir" $root }}
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- with $root.Values.externalRedis }}
        {{- if and (include "td.redis" $root) .tlsCaSecret }}
        - name: redis-ca
          secret:
            secretName: {{ .tlsCaSecret }}
            items:
              - key: {{ .tlsCaSecretKey }}
                path: {{ .tlsCaSecretKey }}
        {{- end }}
        {{- end }}
        {{- if $secretScanning }}
        {{- $scanning := $root.Values.gateway.secretScanning }}
        - name: secret-scanning
          configMap:
            name: {{ $secretScanning }}
            items:
              - key: {{ ternary $scanning.existingConfigMapKey (include "td.secretScanningFile" $root) (ne $scanning.existingConfigMap "") | quote }}
                path: {{ include "td.secretScanningFile" $root }}
        {{- end }}
        - name: data
          {{- if $stateful }}
          persistentVolumeClaim:
            claimName: {{ include "td.claimName" . }}
          {{- else }}
          # With MongoDB nothing under DATA_DIR needs to outlive the pod.
          emptyDir:
            sizeLimit: 256Mi
          {{- end }}
{{- end }}

{{/*
PersistentVolumeClaim of a stateful service's DATA_DIR, unless it uses an existing claim:
include "td.pvc" (dict "root" $ "component" "gateway").
*/}}
{{- define "td.pvc" -}}
{{- $v := index .root.Values .component }}
{{- if and (include "td.stateful" .) (not $v.persistence.existingClaim) }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ include "td.claimName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
  annotations:
    # The data must survive `helm uninstall` followed by a reinstall by mistake.
    helm.sh/resource-policy: keep
spec:
  accessModes: ["ReadWriteOnce"]
  {{- with $v.persistence.storageClass }}
  storageClassName: {{ . | quote }}
  {{- end }}
  resources:
    requests:
      storage: {{ $v.persistence.size }}
{{- end }}
{{- end }}

{{/* Service of one service: the http port and the metrics port (for the ServiceMonitor). */}}
{{- define "td.service" -}}
{{- $v := index .root.Values .component }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "td.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
  {{- with $v.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $v.service.type }}
  selector:
    {{- include "td.componentSelectorLabels" . | trim | nindent 4 }}
  ports:
    - name: http
      port: {{ $v.port }}
      targetPort: http
      protocol: TCP
    - name: metrics
      port: {{ $v.metricsPort }}
      targetPort: metrics
      protocol: TCP
{{- end }}

{{- define "td.hpa" -}}
{{- $v := index .root.Values .component }}
{{- if $v.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "td.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "td.fullname" .root }}-{{ .component }}
  minReplicas: {{ $v.autoscaling.minReplicas }}
  maxReplicas: {{ $v.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $v.autoscaling.targetCPUUtilizationPercentage }}
    {{- if gt (int $v.autoscaling.targetMemoryUtilizationPercentage) 0 }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ $v.autoscaling.targetMemoryUtilizationPercentage }}
    {{- end }}
{{- end }}
{{- end }}

{{- define "td.pdb" -}}
{{- $v := ternary .root.Values.webhooks.worker (index .root.Values .component) (eq .component "webhook-worker") }}
{{- if $v.pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "td.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
spec:
  maxUnavailable: {{ $v.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "td.componentSelectorLabels" . | trim | nindent 6 }}
{{- end }}
{{- end }}
