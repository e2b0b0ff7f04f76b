# A real single-node Kubernetes for the kube package's tests (scripts/k8s.sh; docs/development.md
# and docs/kubernetes.md). k8s-up builds the cluster's one binary on first use (11-15 min on an idle
# 2-core machine, cached in ~/.cache/ceval/k8s/VERSION) and starts the cluster with every
# component in a network namespace of its own; k8s-down stops it by PID and removes everything.
# Tests find it through CEVAL_KUBECONFIG and CEVAL_K8S_CONTAINERD_ADDRESS: under CI=true a
# missing cluster fails them.
K8S_DIR ?= /tmp/ceval-k8s
export CEVAL_KUBECONFIG ?= $(K8S_DIR)/admin.kubeconfig
# The node's containerd (images for Pods: ceval images import --namespace k8s.io).
export CEVAL_K8S_CONTAINERD_ADDRESS ?= $(K8S_DIR)/containerd.sock

.PHONY: k8s-up k8s-down

k8s-up:
	scripts/k8s.sh up $(K8S_DIR)
	$(if $(CEVAL_TEST_REGISTRY),scripts/k8s.sh registry $(K8S_DIR) $(CEVAL_TEST_REGISTRY) $(CEVAL_TEST_REGISTRY_CA))

k8s-down:
	scripts/k8s.sh down $(K8S_DIR)
