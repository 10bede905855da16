{{/* The chart's name: nameOverride or the chart's. */}}
{{- define "redis-rebalancer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride, else the release name, or release-name when it does not hold the name. */}}
{{- define "redis-rebalancer.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "redis-rebalancer.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The namespace of the chart's objects: namespaceOverride or the release's. */}}
{{- define "redis-rebalancer.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "redis-rebalancer.labels" -}}
app.kubernetes.io/name: {{ include "redis-rebalancer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "redis-rebalancer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redis-rebalancer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The ServiceAccount the pods run as. */}}
{{- define "redis-rebalancer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "redis-rebalancer.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The arguments every pass shares, after the command's own: the policy, logging, extraArgs. */}}
{{- define "redis-rebalancer.commonArgs" -}}
{{- $args := list "--policy=/etc/redis-rebalancer/policy.yaml" (printf "--logging-format=%s" .Values.logging.format) -}}
{{- if .Values.logging.verbosity -}}
{{- $args = append $args (printf "-v=%v" .Values.logging.verbosity) -}}
{{- end -}}
{{- concat $args .Values.extraArgs | toJson -}}
{{- end -}}

{{/* The pod template's metadata: the selector labels and podLabels; the policy's checksum (a
changed policy rolls the pods) and podAnnotations. .extra are more annotations (a YAML map). */}}
{{- define "redis-rebalancer.podMetadata" -}}
labels:
  {{- include "redis-rebalancer.selectorLabels" .root | nindent 2 }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  checksum/config: {{ include (print .root.Template.BasePath "/configmap.yaml") .root | sha256sum }}
  {{- with .extra }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with .root.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* The pod spec every kind shares; .args are the container's arguments (a list), .ports its
ports and probes (YAML), .spread the default topology spread constraints (YAML). */}}
{{- define "redis-rebalancer.podSpec" -}}
{{- $v := .root.Values -}}
serviceAccountName: {{ include "redis-rebalancer.serviceAccountName" .root }}
{{- if kindIs "bool" $v.automountServiceAccountToken }}
automountServiceAccountToken: {{ $v.automountServiceAccountToken }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($v.affinity | default .affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $v.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $v.topologySpreadConstraints | nindent 2 }}
{{- else if .spread }}
topologySpreadConstraints:
  {{- .spread | nindent 2 }}
{{- end }}
{{- with $v.dnsConfig }}
dnsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
- name: redis-rebalancer
  image: "{{ $v.image.repository }}:{{ $v.image.tag | default .root.Chart.AppVersion }}"
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args:
    {{- toYaml .args | nindent 4 }}
  {{- with .ports }}
  {{- . | nindent 2 }}
  {{- end }}
  env:
  # The Go runtime collects harder as the heap nears the memory limit instead of being OOM-killed.
  {{- if and $v.resources.limits $v.resources.limits.memory }}
  - name: GOMEMLIMIT
    valueFrom:
      resourceFieldRef: {resource: limits.memory}
  {{- end }}
  {{- with $v.env }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  resources:
    {{- toYaml $v.resources | nindent 4 }}
  volumeMounts:
  - name: policy
    mountPath: /etc/redis-rebalancer
    readOnly: true
  {{- with .volumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with $v.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
volumes:
- name: policy
  configMap:
    name: {{ include "redis-rebalancer.fullname" .root }}-policy
{{- with .volumes }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with $v.extraVolumes }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/* The guard's names: its Service, webhook configuration and certificate Secret. */}}
{{- define "redis-rebalancer.guard" -}}
{{- printf "%s-guard" (include "redis-rebalancer.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The RoleBinding subject: the ServiceAccount. */}}
{{- define "redis-rebalancer.subject" -}}
- kind: ServiceAccount
  name: {{ include "redis-rebalancer.serviceAccountName" . }}
  namespace: {{ include "redis-rebalancer.namespace" . }}
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

{{/* The layout: layout, else policy.selection.layout ("" for none). */}}
{{- define "redis-rebalancer.layout" -}}
{{- .Values.layout | default (dig "selection" "layout" "" .Values.policy) -}}
{{- end -}}

{{/* The Bitnami release's fullname, as bitnami/common's common.names.fullname (2.31) makes it
from the release name, the chart's name and fullnameOverride (bitnami.*): the name of the
release's Secret. */}}
{{- define "redis-rebalancer.bitnamiFullname" -}}
{{- $b := .Values.bitnami -}}
{{- if $b.fullnameOverride -}}
{{- $b.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := $b.name | default "redis-cluster" -}}
{{- $release := regexReplaceAll "(-?[^a-z\\d\\-])+-?" (lower $b.release) "-" -}}
{{- if contains $name $release -}}
{{- $release | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" $release $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Redis password Secret's name ("" with redisSecret.enabled false): redisSecret.name,
else the layout's: bitnami, the Bitnami release's fullname; otherwise redis-password. */}}
{{- define "redis-rebalancer.secretName" -}}
{{- if .Values.redisSecret.enabled -}}
{{- if .Values.redisSecret.name -}}
{{- .Values.redisSecret.name -}}
{{- else if eq (include "redis-rebalancer.layout" .) "bitnami" -}}
{{- include "redis-rebalancer.bitnamiFullname" . -}}
{{- else -}}
redis-password
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Redis password Secret's namespace: redisSecret.namespace, else the first of redisNamespaces. */}}
{{- define "redis-rebalancer.secretNamespace" -}}
{{- .Values.redisSecret.namespace | default (first .Values.redisNamespaces) -}}
{{- end -}}

{{/* The render-time checks across values (values.schema.json checks each value alone): each
failure names the values and what to set. */}}
{{- define "redis-rebalancer.validate" -}}
{{- if not .Values.redisNamespaces }}
{{- fail "redisNamespaces: name the Redis clusters' namespaces (an empty list would grant and select nothing; it never means every namespace)" }}
{{- end }}
{{- if and .Values.guard.enabled (ne .Values.kind "deployment") }}
{{- fail (printf "guard.enabled: the eviction guard is served by serve, kind deployment; kind %s runs passes only and would answer no webhook: set kind=deployment, or guard.enabled=false" .Values.kind) }}
{{- end }}
{{- with .Values.policy.selection }}
{{- if hasKey . "namespaces" }}
{{- fail "policy.selection.namespaces: the chart sets it from redisNamespaces (the same list grants the RBAC and scopes the guard): set redisNamespaces instead" }}
{{- end }}
{{- end }}
{{- with .Values.policy.selection }}
{{- if and $.Values.layout .layout (ne $.Values.layout .layout) }}
{{- fail (printf "layout %s and policy.selection.layout %s disagree: set layout alone (it writes policy.selection.layout)" $.Values.layout .layout) }}
{{- end }}
{{- end }}
{{- if and .Values.redisSecret.enabled (not (has (include "redis-rebalancer.secretNamespace" .) .Values.redisNamespaces)) }}
{{- fail (printf "redisSecret.namespace: %s is not one of redisNamespaces %v: the chart grants nothing outside them; add it there, or move the Secret" .Values.redisSecret.namespace .Values.redisNamespaces) }}
{{- end }}
{{- if and .Values.guard.enabled .Values.networkPolicy.enabled (not .Values.networkPolicy.apiServer) }}
{{- fail "networkPolicy.apiServer: with guard.enabled the NetworkPolicy admits only kube-apiserver to the guard's port: name how it reaches pods (e.g. [{ipBlock: {cidr: 10.0.0.2/32}}], its addresses from `kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes`), or set networkPolicy.enabled=false" }}
{{- end }}
{{- end -}}
