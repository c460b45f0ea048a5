# Entry points. Scripts under hack/ do the work; see README.md.
STATE ?= $(CURDIR)/_state

.PHONY: build run test unit e2e faults soak kubeadm-test bench runtime-up runtime-down tools cluster-up cluster-down fuzz conformance conformance-report

build:
	CGO_ENABLED=0 go build -o _output/bin/nodelet ./cmd/nodelet

# Sets up containerd and runs nodelet standalone on examples/manifests.
run:
	bash hack/run-standalone.sh

# Sets up everything and runs every test (unit + end-to-end). .ci/run calls this.
test:
	bash hack/test.sh

unit:
	go test ./...

e2e:
	bash hack/test.sh e2e

# The fault suite at full size and duration (CI runs its short form with the other e2e tests);
# see docs/RELIABILITY.md.
faults:
	NODELET_FAULTS_FULL=1 bash hack/test.sh faults

# The 30-minute churn soak with leak accounting (CI runs a short form); see docs/RELIABILITY.md.
soak:
	NODELET_SOAK_FULL=1 bash hack/test.sh soak

# kubeadm init, join and reset with nodelet as the kubelet (e2e/kubeadm_test.go); see docs/CLUSTER.md.
kubeadm-test:
	bash hack/test.sh kubeadm

bench:
	bash hack/bench.sh

runtime-up:
	bash hack/runtime-up.sh $(STATE)/runtime

runtime-down:
	bash hack/runtime-down.sh $(STATE)/runtime

tools:
	bash hack/build-tools.sh

cluster-up:
	bash hack/cluster-up.sh $(STATE)/cluster

cluster-down:
	bash hack/cluster-down.sh $(STATE)/cluster

# Every fuzz target for FUZZTIME (default 30s each); FUZZ=FuzzName runs one.
fuzz:
	FUZZTIME=$(or $(FUZZTIME),30s) bash hack/fuzz.sh $(FUZZ)

# Upstream node conformance specs against nodelet (AGENT=upstream: the upstream kubelet); see docs/CONFORMANCE.md.
AGENT ?= nodelet
conformance:
	bash hack/conformance.sh --agent $(AGENT) $(if $(FOCUS),--focus '$(FOCUS)')

# Rewrites docs/CONFORMANCE.md from the reports in _output/conformance/{nodelet,upstream}.
conformance-report:
	go run ./hack/conformance-report
