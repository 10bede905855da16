{{/* The objects' name: the release name, or release-chart when it does not hold the chart's name. */}}
{{- define "redis-rebalancer.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "redis-rebalancer.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "redis-rebalancer.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pod spec every kind shares; .args are the container's arguments. */}}
{{- define "redis-rebalancer.podSpec" -}}
serviceAccountName: {{ include "redis-rebalancer.fullname" .root }}
terminationGracePeriodSeconds: {{ .root.Values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.affinity | default .root.Values.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
- name: redis-rebalancer
  image: "{{ .root.Values.image.repository }}:{{ .root.Values.image.tag | default .root.Chart.AppVersion }}"
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  args:
    {{- toYaml (concat .args .root.Values.extraArgs) | nindent 4 }}
  {{- with .ports }}
  {{- . | nindent 2 }}
  {{- end }}
  securityContext:
    {{- toYaml .root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml .root.Values.resources | nindent 4 }}
  volumeMounts:
  - name: policy
    mountPath: /etc/redis-rebalancer
    readOnly: true
  {{- with .volumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
volumes:
- name: policy
  configMap:
    name: {{ include "redis-rebalancer.fullname" .root }}-policy
{{- with .volumes }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/* The guard's names: its Service, webhook configuration and certificate Secret. */}}
{{- define "redis-rebalancer.guard" -}}
{{- printf "%s-guard" (include "redis-rebalancer.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease flags of every kind: run's and serve's (docs/operations.md). */}}
{{- define "redis-rebalancer.leaseArgs" -}}
{{- $le := .Values.leaderElection -}}
{{- list "--leader-elect=true" (printf "--leader-elect-resource-name=%s" $le.leaseName) (printf "--leader-elect-lease-duration=%s" $le.leaseDuration)
      (printf "--leader-elect-renew-deadline=%s" $le.renewDeadline) (printf "--leader-elect-retry-period=%s" $le.retryPeriod) | toJson -}}
{{- end -}}

{{/* A Job's podFailurePolicy: an error (1) or a cluster that needs attention (3) fails the Job at
once; the rebalancer's own pod disrupted is run again (docs/operations.md). */}}
{{- define "redis-rebalancer.podFailurePolicy" -}}
podFailurePolicy:
  rules:
  - action: Ignore
    onPodConditions:
    - type: DisruptionTarget
  - action: FailJob
    onExitCodes:
      containerName: redis-rebalancer
      operator: In
      values: [1, 3]
{{- end -}}
