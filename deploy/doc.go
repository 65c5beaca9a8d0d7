// Package deploy holds Spotter's Kubernetes manifests, as kustomize bases:
//
//	batch/  an Indexed Job that shards a jobs file across pods
//	        (`spotter batch --shard $(JOB_COMPLETION_INDEX)/N`) and writes
//	        every shard's results to one PersistentVolumeClaim
//	serve/  a Deployment and Service for `spotter serve`, with PostgreSQL
//	        as the shared store (its DSN comes from a Secret)
//
// The package has no Go API; its tests decode every manifest strictly with
// the Kubernetes API types and check the invariants the manifests must
// keep. docs/SCALE.md says how to use them.
package deploy
