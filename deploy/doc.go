// Package deploy holds Spotter's Kubernetes manifests, as kustomize bases:
//
//	batch/  an Indexed Job that shards a jobs file across pods
//	        (`spotter batch --shard $(JOB_COMPLETION_INDEX)/N`) and writes
//	        every shard's results to one PersistentVolumeClaim
//	serve/  a Deployment of `spotter serve` replicas sharing PostgreSQL
//	        (its DSN and the token come from Secrets) and a data volume,
//	        a Service, a PodDisruptionBudget, a HorizontalPodAutoscaler
//	        and a NetworkPolicy
//	overlays/cnpg, overlays/external
//	        serve with its PostgreSQL (a CloudNativePG Cluster, or a DSN of
//	        yours) and the components below: what a cluster applies
//	components/peer-tls, components/ingress, components/monitoring
//	        TLS between the replicas (cert-manager), the Ingress, and
//	        metrics, alerts and a dashboard
//
// The package has no Go API. Its tests render every base and overlay with
// kustomize's library, decode every object strictly with the Kubernetes
// API types, validate them as the API server would (custom resources
// against their CRDs' schemas in testdata/crds), check the invariants the
// manifests must keep, and (with SPOTTER_INTEGRATION=1) start the built
// binary with the rendered manifests' own args, env and probes.
// docs/SCALE.md says how to use them.
package deploy
