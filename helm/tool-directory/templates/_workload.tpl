{{/*
Deployment of one service: include "td.deployment" (dict "root" $ "component" "gateway").
Both services run the same way; they differ in image, ports, config and (gateway only) Redis
and the DATA_DIR claim.
*/}}
{{- define "td.deployment" -}}
{{- $root := .root }}
{{- $component := .component }}
{{- $v := index $root.Values $component }}
{{- $fullname := include "td.fullname" $root }}
{{- $isGateway := eq $component "gateway" }}
{{- $claim := and $isGateway (not $root.Values.mongodb.enabled) $v.persistence.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "td.componentLabels" . | trim | nindent 4 }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "td.componentSelectorLabels" . | trim | nindent 6 }}
  strategy:
    {{- if $claim }}
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
        checksum/config: {{ include (print $root.Template.BasePath "/" $component "/configmap.yaml") $root | sha256sum }}
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
        {{- include "td.topologySpread" . | trim | nindent 8 }}
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
          image: {{ include "td.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ $v.port }}
              protocol: TCP
            - name: metrics
              containerPort: {{ $v.metricsPort }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ $fullname }}-{{ $component }}
          env:
            {{- include "td.secretEnv" (dict "root" $root "redis" $isGateway) | trim | nindent 12 }}
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
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        - name: data
          {{- if $claim }}
          persistentVolumeClaim:
            claimName: {{ $fullname }}-{{ $component }}-data
          {{- else }}
          emptyDir:
            sizeLimit: 256Mi
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
{{- $v := index .root.Values .component }}
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
