// Package deploy holds Spotter's Kubernetes manifests, as kustomize bases:
//
//	batch/  an Indexed Job that shards a jobs file across pods
//	        (`spotter batch --shard $(JOB_COMPLETION_INDEX)/N`) and writes
//	        every shard's results to one PersistentVolumeClaim
//	serve/  a Deployment of `spotter serve` replicas sharing PostgreSQL
//	        (its DSN and the token come from Secrets) and a data volume,
//	        a Service, and a PodDisruptionBudget
//
// The package has no Go API. Its tests decode every manifest strictly with
// the Kubernetes API types, validate them as the API server would, check
// the invariants the manifests must keep, and (with SPOTTER_INTEGRATION=1)
// start the built binary with the manifests' own args, env and probes.
// docs/SCALE.md says how to use them.
package deploy
